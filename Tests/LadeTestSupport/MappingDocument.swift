import Foundation
import Lade

/// Writes an Xcode mapping model document (`NAME.xcmappingmodel/xcmapping.xml`) as Xcode's
/// mapping editor saves one: entity mappings with their source and destination, and the names of
/// the properties they map, each with its value expression generated or, when `expressions`
/// gives one, typed in the editor (an archived `NSExpression`, ``ArchivedExpression``). For tests
/// and the benchmark, which need mapping models of their own models.
public struct MappingDocument {
    public struct Entity {
        public var source: String?
        public var destination: String?
        public var attributes: [String]
        public var relationships: [String]
        /// `sourcefilterpredicatestring`.
        public var filter: String?
        /// Relationships whose source mapping name and key path are set, as in Xcode's inspector.
        public var sources: [String: (mapping: String, keyPath: String)]
        /// Attributes whose value expression was typed in the editor (`valueexpressiondata`).
        public var expressions: [String: ArchivedExpression]

        public init(source: String?, destination: String?, attributes: [String], relationships: [String] = [], filter: String? = nil,
                    sources: [String: (mapping: String, keyPath: String)] = [:], expressions: [String: ArchivedExpression] = [:]) {
            self.source = source
            self.destination = destination
            self.attributes = attributes
            self.relationships = relationships
            self.filter = filter
            self.sources = sources
            self.expressions = expressions
        }
    }

    public var bundleName: String
    public var sourceVersion: String
    public var destinationVersion: String
    public var entities: [Entity]

    public init(bundleName: String, from sourceVersion: String, to destinationVersion: String, entities: [Entity]) {
        self.bundleName = bundleName
        self.sourceVersion = sourceVersion
        self.destinationVersion = destinationVersion
        self.entities = entities
    }

    /// Writes the document as `url` (a `.xcmappingmodel` directory).
    public func write(to url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        var next = 2
        var objects: [String] = []
        func id() -> String { defer { next += 1 }; return "z\(next)" }
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        }
        func string(_ name: String, _ value: String) -> String { "        <attribute name=\"\(name)\" type=\"string\">\(escaped(value))</attribute>\n" }
        for (number, entity) in entities.enumerated() {
            let entityID = id()
            var attributeIDs: [String] = []
            var relationshipIDs: [String] = []
            for name in entity.attributes {
                let property = id()
                attributeIDs.append(property)
                let expression = try entity.expressions[name].map {
                    "        <attribute name=\"valueexpressiondata\" type=\"binary\">\(try $0.archive().base64EncodedString())</attribute>\n"
                } ?? ""
                objects.append("    <object type=\"XDDEVATTRIBUTEMAPPING\" id=\"\(property)\">\n" + string("name", name) + expression
                    + "        <relationship name=\"entitymapping\" type=\"1/1\" destination=\"XDDEVENTITYMAPPING\" idrefs=\"\(entityID)\"></relationship>\n    </object>\n")
            }
            for name in entity.relationships {
                let property = id()
                relationshipIDs.append(property)
                let source = entity.sources[name].map { string("sourcemappingname", $0.mapping) + string("sourcekeypath", $0.keyPath) } ?? ""
                objects.append("    <object type=\"XDDEVRELATIONSHIPMAPPING\" id=\"\(property)\">\n"
                    + "        <attribute name=\"autogenerateexpression\" type=\"bool\">1</attribute>\n" + string("name", name) + source
                    + "        <relationship name=\"entitymapping\" type=\"1/1\" destination=\"XDDEVENTITYMAPPING\" idrefs=\"\(entityID)\"></relationship>\n    </object>\n")
            }
            var body = "    <object type=\"XDDEVENTITYMAPPING\" id=\"\(entityID)\">\n"
            if let source = entity.source { body += string("sourcename", source) }
            if let destination = entity.destination { body += string("destinationname", destination) }
            if let filter = entity.filter { body += string("sourcefilterpredicatestring", filter) }
            body += string("mappingtypename", "Undefined")
            body += "        <attribute name=\"mappingnumber\" type=\"int16\">\(number + 1)</attribute>\n"
            body += "        <attribute name=\"autogenerateexpression\" type=\"bool\">1</attribute>\n"
            body += "        <relationship name=\"mappingmodel\" type=\"1/1\" destination=\"XDDEVMAPPINGMODEL\" idrefs=\"z1\"></relationship>\n"
            body += "        <relationship name=\"attributemappings\" type=\"0/0\" destination=\"XDDEVATTRIBUTEMAPPING\" idrefs=\"\(attributeIDs.joined(separator: " "))\"></relationship>\n"
            body += "        <relationship name=\"relationshipmappings\" type=\"0/0\" destination=\"XDDEVRELATIONSHIPMAPPING\" idrefs=\"\(relationshipIDs.joined(separator: " "))\"></relationship>\n"
            objects.append(body + "    </object>\n")
        }
        let document = """
            <?xml version="1.0" standalone="no"?>
            <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">

            <database>
                <databaseInfo>
                    <version>134481920</version>
                    <UUID>\(UUID().uuidString)</UUID>
                    <nextObjectID>\(next)</nextObjectID>
                </databaseInfo>
                <object type="XDDEVMAPPINGMODEL" id="z1">
                    <attribute name="sourcemodelpath" type="string">\(escaped(bundleName)).xcdatamodeld/\(escaped(sourceVersion)).xcdatamodel</attribute>
                    <attribute name="destinationmodelpath" type="string">\(escaped(bundleName)).xcdatamodeld/\(escaped(destinationVersion)).xcdatamodel</attribute>
                </object>

            """ + objects.joined() + "</database>\n"
        try Data(document.utf8).write(to: url.appendingPathComponent("xcmapping.xml"), options: .atomic)
    }

    /// Every entity of `destination` mapped from the source entity of the same name, every
    /// stored attribute and relationship (inherited ones included) by its generated expression.
    public static func sameNames(bundleName: String, from sourceVersion: String, to destinationVersion: String,
                                 source: ManagedObjectModel, destination: ManagedObjectModel) -> MappingDocument {
        let entities = destination.entities.filter { !$0.isAbstract && source.entity(named: $0.name) != nil }.map { entity in
            Entity(source: entity.name, destination: entity.name,
                   attributes: destination.attributes(of: entity.name).filter { !$0.isTransient }.map(\.name),
                   relationships: destination.relationships(of: entity.name).filter { !$0.isTransient }.map(\.name))
        }
        return MappingDocument(bundleName: bundleName, from: sourceVersion, to: destinationVersion, entities: entities)
    }
}
