import Foundation

/// Every error Lade throws: one sentence that says what is wrong and where (file, line, field
/// when there is one) and what to do, and a stable `code` a script can test.
///
/// ```swift
/// do { _ = try context.fetch(request) }
/// catch let error as LadeError { print(error.code, error) }   // "store.damaged …"
/// ```
///
/// Codes are `area.what`: `model` (a model Lade cannot accept), `model.unknownEntity`,
/// `store.*` (`notFound`, `alreadyExists`, `notAStore`, `wrongType`, `modelMismatch`,
/// `readOnly`, `reservedMetadataKey`, `io`, `sqlite`, `damaged`, `locked`), `save.*`
/// (`conflict`, `notUnique`), `validation`, `context.*`, `predicate.*`, `regex`, `plist`,
/// `value`, `coordinator.*`, `migration.*` (`refused`, `mapping`, `failed`, `storeChanged`,
/// `noCurrentVersion`), `history.*` (`notTracked`, `unsupportedStoreType`), and in the pipeline `job`, `source`, `meta.value`, `sort`. Each error
/// type declares its codes beside its declaration, in the folder of the layer that throws it.
public protocol LadeError: Error, CustomStringConvertible {
    var code: String { get }
}
