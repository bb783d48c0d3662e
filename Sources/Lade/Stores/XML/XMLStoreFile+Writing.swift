import CLibXML2
import Foundation

extension XMLStoreFile {
    /// Writes the whole store as Core Data does, objects in key order.
    static func write(_ contents: AtomicStoreContents, model: ManagedObjectModel, to output: FileOutput) throws {
        let writer = try XMLStreamWriter(descriptor: output.descriptor, path: output.path)
        let graph = contents.graph
        try writeHeader(writer, uuid: contents.identifier, nextObjectID: graph.nextKey - 1, metadata: contents.metadata)
        func id(_ key: Int64) -> String { graph.externalIDs[key] ?? "z\(key)" }
        for key in graph.objects.keys.sorted() {
            let object = graph[key]!
            try writer.newline(indent: 1)
            try writer.start("object")
            try writer.attribute("type", XMLStoreNames.entityName(object.entity))
            try writer.attribute("id", id(key))
            for attribute in model.attributes(of: object.entity) where !attribute.isTransient && attribute.type != .undefined {
                guard let value = object.attributes[attribute.name] else { continue }
                if case .string(let text) = value, let scalar = XMLStoreValueCoding.unrepresentableCharacter(in: text) {
                    throw StoreError(.io, path: output.path, "object \(id(key)) (\(object.entity)), attribute \(attribute.name): the text holds U+\(String(scalar.value, radix: 16, uppercase: true)), which XML cannot hold; keep such text in a SQLite or binary store. The store is unchanged")
                }
                try writer.newline(indent: 2)
                try writer.start("attribute")
                try writer.attribute("name", XMLStoreNames.propertyName(attribute.name))
                try writer.attribute("type", XMLStoreValueCoding.typeName(attribute.type))
                try writer.text(XMLStoreValueCoding.text(value))
                try writer.end()
            }
            for relationship in model.relationships(of: object.entity) where !relationship.isTransient {
                let destinations = relationship.isToMany
                    ? Array(object.toMany[relationship.name] ?? [])
                    : object.toOne[relationship.name].map { [$0] } ?? []
                let present = destinations.filter { graph[$0] != nil }
                try writer.newline(indent: 2)
                try writer.start("relationship")
                try writer.attribute("name", XMLStoreNames.propertyName(relationship.name))
                let minimum = relationship.isToMany ? relationship.minCount : (relationship.isOptional ? 0 : 1)
                try writer.attribute("type", "\(minimum)/\(relationship.maxCount)")
                try writer.attribute("destination", XMLStoreNames.entityName(relationship.destinationEntityName))
                if !present.isEmpty { try writer.attribute("idrefs", present.map(id).joined(separator: " ")) }
                try writer.end()
            }
            try writer.newline(indent: 1)
            try writer.end()
        }
        try writer.newline(indent: 0)
        try writer.end()
        try writer.finish()
    }

    /// Writes the prolog, `<database>` (left open) and `<databaseInfo>`.
    static func writeHeader(_ writer: XMLStreamWriter, uuid: String?, nextObjectID: Int64, metadata: [String: PropertyListValue]) throws {
        try writer.startDocument(standalone: true)
        try writer.doctype("database", systemID: systemID)
        try writer.raw("\n\n")
        try writer.start("database")
        try writer.newline(indent: 1)
        try writer.start("databaseInfo")
        try writer.newline(indent: 2)
        try writer.element("version", String(formatVersion))
        if let uuid {
            try writer.newline(indent: 2)
            try writer.element("UUID", uuid)
        }
        try writer.newline(indent: 2)
        try writer.element("nextObjectID", String(nextObjectID))
        try writer.newline(indent: 2)
        try writer.start("metadata")
        var plist = metadata
        plist[StoreMetadata.Key.storeType] = nil
        plist[StoreMetadata.Key.storeUUID] = nil
        try writer.newline(indent: 3)
        try writer.propertyList(.dictionary(plist), indent: 3)
        try writer.newline(indent: 2)
        try writer.end()
        try writer.newline(indent: 1)
        try writer.end()
    }

    /// Replaces the metadata in `<databaseInfo>`: a new file is written beside the store with
    /// the new header, the rest of the document streamed through from the old file node by
    /// node, and moved into place atomically.
    static func writeMetadata(_ metadata: [String: PropertyListValue], at url: URL) throws {
        let reader = try XMLStreamReader(path: url.path)
        let header = try readHeader(reader)
        try AtomicFileWriter.replace(url) { output in
            let writer = try XMLStreamWriter(descriptor: output.descriptor, path: url.path)
            try writeHeader(writer, uuid: header.uuid, nextObjectID: header.nextObjectID, metadata: metadata)
            try copyRemainingNodes(from: reader, to: writer)
            try writer.finish()
        }
    }

    /// Copies every node after the reader's position, as it is: elements with their
    /// attributes (`<a/>` stays `<a/>`, `<a></a>` stays so), text, whitespace, CDATA, comments.
    private static func copyRemainingNodes(from reader: XMLStreamReader, to writer: XMLStreamWriter) throws {
        while try reader.read() {
            switch reader.nodeType {
            case Int32(XML_READER_TYPE_ELEMENT.rawValue):
                try writer.start(reader.name)
                for (name, value) in reader.attributes() { try writer.attribute(name, value) }
                if reader.isEmptyElement { try writer.endCompact() }
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                try writer.end()
            case Int32(XML_READER_TYPE_TEXT.rawValue):
                try writer.text(reader.value)
            case Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                try writer.raw(reader.value)
            case Int32(XML_READER_TYPE_CDATA.rawValue):
                try writer.cdata(reader.value)
            case Int32(XML_READER_TYPE_COMMENT.rawValue):
                try writer.comment(reader.value)
            case Int32(XML_READER_TYPE_PROCESSING_INSTRUCTION.rawValue):
                try writer.raw("<?\(reader.name) \(reader.value)?>")
            case Int32(XML_READER_TYPE_ENTITY_REFERENCE.rawValue):
                try writer.raw("&\(reader.name);")
            default:
                continue
            }
        }
    }
}
