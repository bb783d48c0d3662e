import Foundation

/// One version of a model the hostile migration suite generates: entities with attributes,
/// to-one relationships (no inverses) and single-attribute uniqueness constraints, written as
/// the `contents` Xcode saves, and read by the suite's oracle as Core Data's inferred mapping
/// reads a model: entities and properties matched by renaming identifier (Xcode's `elementID`;
/// unset, the name).
struct GeneratedModel {
    enum AttributeType: String, CaseIterable {
        case string = "String", integer16 = "Integer 16", integer32 = "Integer 32", integer64 = "Integer 64"
        case decimal = "Decimal", double = "Double", boolean = "Boolean", date = "Date"

        var isInteger: Bool { [.integer16, .integer32, .integer64].contains(self) }
        var integerRange: ClosedRange<Int64> {
            switch self {
            case .integer16: Int64(Int16.min)...Int64(Int16.max)
            case .integer32: Int64(Int32.min)...Int64(Int32.max)
            default: Int64.min...Int64.max
            }
        }

        /// What Core Data's inferred mapping carries from `self` to `other`: the same type,
        /// an Integer widened, an Integer made Decimal.
        func carries(to other: AttributeType) -> Bool {
            if self == other { return true }
            if isInteger && other == .decimal { return true }
            return isInteger && other.isInteger && other.integerRange.upperBound > integerRange.upperBound
        }
    }

    struct Attribute {
        var name: String
        var type: AttributeType
        var isOptional: Bool
        /// `defaultValueString`.
        var defaultValue: String?
        var renamingIdentifier: String?
        var identifier: String { renamingIdentifier ?? name }
    }

    struct Relationship {
        var name: String
        var destination: String
        var renamingIdentifier: String?
        var identifier: String { renamingIdentifier ?? name }
    }

    struct Entity {
        var name: String
        var renamingIdentifier: String?
        var attributes: [Attribute]
        var relationships: [Relationship] = []
        /// Single-attribute uniqueness constraints, in declaration order.
        var uniqueAttributes: [String] = []
        var identifier: String { renamingIdentifier ?? name }

        func attribute(_ name: String) -> Attribute? { attributes.first { $0.name == name } }
    }

    var name: String
    var entities: [Entity]

    func entity(_ name: String) -> Entity? { entities.first { $0.name == name } }
    func index(of entity: String) -> Int? { entities.firstIndex { $0.name == entity } }

    /// The model as Xcode's `contents`.
    var contents: String {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<model type=\"com.apple.IDECoreDataModeler.DataModel\" documentVersion=\"1.0\">\n"
        for entity in entities {
            text += "    <entity name=\"\(entity.name)\" representedClassName=\"\(entity.name)\" syncable=\"YES\""
            if let id = entity.renamingIdentifier { text += " elementID=\"\(id)\"" }
            text += ">\n"
            for attribute in entity.attributes {
                text += "        <attribute name=\"\(attribute.name)\""
                if attribute.isOptional { text += " optional=\"YES\"" }
                text += " attributeType=\"\(attribute.type.rawValue)\""
                if let value = attribute.defaultValue { text += " defaultValueString=\"\(value)\"" }
                if attribute.type.isInteger || attribute.type == .double || attribute.type == .boolean { text += " usesScalarValueType=\"YES\"" }
                if let id = attribute.renamingIdentifier { text += " elementID=\"\(id)\"" }
                text += "/>\n"
            }
            for relationship in entity.relationships {
                text += "        <relationship name=\"\(relationship.name)\" optional=\"YES\" maxCount=\"1\" deletionRule=\"Nullify\" destinationEntity=\"\(relationship.destination)\""
                if let id = relationship.renamingIdentifier { text += " elementID=\"\(id)\"" }
                text += "/>\n"
            }
            if !entity.uniqueAttributes.isEmpty {
                text += "        <uniquenessConstraints>\n"
                for name in entity.uniqueAttributes {
                    text += "            <uniquenessConstraint><constraint value=\"\(name)\"/></uniquenessConstraint>\n"
                }
                text += "        </uniquenessConstraints>\n"
            }
            text += "    </entity>\n"
        }
        return text + "</model>\n"
    }

    /// Writes `versions` as the bundle `url` (`NAME.xcdatamodeld`), the last one current.
    static func writeBundle(_ versions: [GeneratedModel], to url: URL) throws {
        for version in versions {
            let directory = url.appendingPathComponent("\(version.name).xcdatamodel")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(version.contents.utf8).write(to: directory.appendingPathComponent("contents"))
        }
        try Data("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict><key>_XCCurrentVersionName</key><string>\(versions.last!.name).xcdatamodel</string></dict></plist>
            """.utf8).write(to: url.appendingPathComponent(".xccurrentversion"))
    }
}

/// A value of a generated object, typed as the oracle reasons about it.
enum GeneratedValue: Hashable {
    case null
    case string(String)
    case integer(Int64)
    /// Exact decimal text without exponent or trailing zeros, as docs/export-format.md writes it.
    case decimal(String)
    case double(Double)
    case bool(Bool)
    /// Whole seconds since 1970.
    case date(Int64)

    var isNull: Bool { self == .null }

    /// The value `defaultValueString` gives an attribute of `type`.
    static func defaultValue(_ text: String?, _ type: GeneratedModel.AttributeType) -> GeneratedValue {
        guard let text else { return .null }
        switch type {
        case .string: return .string(text)
        case .integer16, .integer32, .integer64: return .integer(Int64(text)!)
        case .decimal: return .decimal(text)
        case .double: return .double(Double(text)!)
        case .boolean: return .bool(text == "YES")
        case .date: return .date(Int64(text)!)
        }
    }

    /// The value carried from an attribute of type `from` to one of type `to` (a type Core Data carries).
    func converted(from: GeneratedModel.AttributeType, to: GeneratedModel.AttributeType) -> GeneratedValue {
        if case .integer(let number) = self, to == .decimal { return .decimal(String(number)) }
        return self
    }

    /// As `lade export` writes it in NDJSON (docs/export-format.md, "Values").
    var exported: ExportJSON {
        switch self {
        case .null: .null
        case .string(let text): .string(text)
        case .integer(let number): .number(String(number))
        case .decimal(let text): .string(text)
        case .double(let number): .number("\(number)")
        case .bool(let flag): .bool(flag)
        case .date(let seconds): .string(Self.iso(seconds))
        }
    }

    /// As a JSON source field for `lade run`/`lade seed`: numbers, Booleans and null typed;
    /// decimals as text (exact), dates in ISO 8601.
    var source: String {
        switch self {
        case .null: "null"
        case .string(let text): SourceText.json(text)
        case .integer(let number): String(number)
        case .decimal(let text): "\"\(text)\""
        case .double(let number): "\(number)"
        case .bool(let flag): flag ? "true" : "false"
        case .date(let seconds): "\"\(Self.iso(seconds))\""
        }
    }

    static func iso(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    /// A random value of `type`, extremes and awkward text included.
    static func random(_ type: GeneratedModel.AttributeType, using random: inout SeededGenerator, storeKeepsDigits: Int) -> GeneratedValue {
        switch type {
        case .string:
            let pieces = ["a", "b", "Z", " ", "é", "e\u{301}", "\"", "\\", "\n", "日本", "🙂", "x,y", "0"]
            return .string((0..<random.int(1...6)).map { _ in random.pick(pieces) }.joined())
        case .integer16, .integer32, .integer64:
            let range = type.integerRange
            switch random.int(6) {
            case 0: return .integer(range.lowerBound)
            case 1: return .integer(range.upperBound)
            case 2: return .integer(Int64(random.int(-9...9)))
            case 3 where type == .integer64: return .integer(9_007_199_254_740_993 * (random.chance(50) ? 1 : -1))
            default:
                let span = UInt64(bitPattern: range.upperBound &- range.lowerBound)
                return .integer(range.lowerBound &+ Int64(bitPattern: span == .max ? random.next() : random.next() % (span + 1)))
            }
        case .decimal:
            let digits = random.int(1...storeKeepsDigits)
            var text = String((0..<digits).map { _ in Character(String(random.int(10))) })
            let scale = random.int(0...min(digits, 6))
            if scale > 0 { text.insert(".", at: text.index(text.endIndex, offsetBy: -scale)) }
            return .decimal(canonicalDecimal((random.chance(30) ? "-" : "") + text))
        case .double:
            switch random.int(4) {
            case 0: return .double(random.pick([0.1, -2.5, 1e20, 3.0, 1e-7, 0.0, 123456.789]))
            default:
                var value: Double
                repeat { value = Double(bitPattern: random.next()) } while !value.isNormal
                return .double(value)
            }
        case .boolean: return .bool(random.chance(50))
        case .date: return .date(Int64(random.int(0...4_000_000_000)) - 1_000_000_000)
        }
    }

    /// `-0012.3400` → `-12.34`; `-0` → `0`.
    static func canonicalDecimal(_ text: String) -> String {
        var negative = false
        var body = Substring(text)
        if body.hasPrefix("-") { negative = true; body = body.dropFirst() }
        var whole = String(body.split(separator: ".", omittingEmptySubsequences: false)[0])
        var fraction = body.contains(".") ? String(body.split(separator: ".", omittingEmptySubsequences: false)[1]) : ""
        while whole.count > 1 && whole.hasPrefix("0") { whole.removeFirst() }
        if whole.isEmpty { whole = "0" }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        let result = fraction.isEmpty ? whole : whole + "." + fraction
        return negative && result != "0" ? "-" + result : result
    }
}
