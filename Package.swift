// swift-tools-version:6.0
import Foundation
import PackageDescription

let package = Package(
    name: "Lade",
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "Lade", targets: ["Lade"]),
        .library(name: "LadePipeline", targets: ["LadePipeline"]),
        .executable(name: "lade", targets: ["lade"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // System-library shims: module maps only; pkg-config finds the flags, apt names the package.
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CLibXML2", path: "Sources/CLibXML2", pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]),
        .systemLibrary(
            name: "CZlib", path: "Sources/CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),
        // PostgreSQL's own client library: its URL form, PG* variables, ~/.pgpass, sslmode, COPY.
        .systemLibrary(
            name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),

        .target(
            name: "Lade",
            dependencies: [
                "CSQLite", "CLibXML2", "CZlib", "CLibPQ",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ]),
        .target(
            name: "LadePipeline",
            dependencies: [
                "Lade", "CZlib",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "lade",
            dependencies: [
                "LadePipeline", "Lade",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // Reader throughput on the benchmark's row shape (not part of the product): see its main.swift.
        .executableTarget(
            name: "reader-throughput", dependencies: ["LadePipeline"], path: "Benchmarks/ReaderThroughput"),
        // make bench: lade beside sqlite3 on generated data (not part of the product).
        .executableTarget(
            name: "lade-bench", dependencies: ["Lade", "LadePipeline", "LadeTestSupport", .product(name: "Crypto", package: "swift-crypto")], path: "Benchmarks/LadeBench"),

        // What the test targets share (a seeded generator, store file digests); not part of the product.
        .target(
            name: "LadeTestSupport", dependencies: ["Lade", .product(name: "Crypto", package: "swift-crypto")], path: "Tests/LadeTestSupport"),
        // The conditions that skip tests and count them (.slow for make test-fast, .needsCorpus) and
        // where the Core Data corpus is; apart from LadeTestSupport, which lade-bench links, since it
        // imports Testing.
        .target(name: "LadeTestTraits", path: "Tests/LadeTestTraits"),
        .testTarget(name: "LadeTests", dependencies: ["Lade", "LadeTestSupport", "LadeTestTraits"]),
        .testTarget(name: "LadePipelineTests", dependencies: ["LadePipeline", "Lade", "LadeTestSupport", "LadeTestTraits"]),
        .testTarget(name: "LadeCLITests", dependencies: ["Lade", "LadeTestSupport", "LadeTestTraits"]),
    ]
)

// make fuzz: the libFuzzer harness, a target only when LADE_FUZZ=1, because it links only with
// libFuzzer's runtime (`-sanitize=fuzzer`), which an ordinary build does not have.
if ProcessInfo.processInfo.environment["LADE_FUZZ"] == "1" {
    package.targets.append(.executableTarget(
        name: "lade-fuzz", dependencies: ["Lade", "LadePipeline"], path: "Fuzz/LadeFuzz"))
}

