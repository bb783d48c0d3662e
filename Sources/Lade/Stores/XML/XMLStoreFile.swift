import CLibXML2
import Foundation
import OrderedCollections

/// Core Data's XML store file, read as a stream and written with libxml2:
///
/// ```xml
/// <?xml version="1.0" standalone="yes"?>
/// <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">
///
/// <database>
///     <databaseInfo>
///         <version>134481920</version>
///         <UUID>D1E2667A-3268-45DB-8AA0-DF69A046A0F1</UUID>
///         <nextObjectID>118</nextObjectID>
///         <metadata>
///             <plist version="1.0">…</plist>
///         </metadata>
///     </databaseInfo>
///     <object type="UNIT" id="z102">
///         <attribute name="value" type="int32">10000</attribute>
///         <relationship name="unit" type="0/1" destination="UNIT" idrefs="z106"></relationship>
///     </object>
/// </database>
/// ```
///
/// As Core Data writes it: entity names upper-cased in `type` and `destination`, property names
/// lower-cased (so names are matched without regard to case when reading), object IDs
/// `z<N>` with `nextObjectID` the last N given out (so the next object is `z<nextObjectID+1>`;
/// a new store's first is `z102`), every relationship of an object written (an empty
/// one without `idrefs`), nil attributes left out, and `NSStoreType` and `NSStoreUUID` kept
/// out of the metadata plist (the UUID is `<UUID>`). Attribute values: `XMLStoreValueCoding`.
enum XMLStoreFile {
    /// `<version>`: the only one Core Data reads or writes.
    static let formatVersion: Int64 = 134_481_920
    static let systemID = "file:///System/Library/DTDs/CoreData.dtd"
    /// The first object ID of a new store, as in Core Data's files (`z102`).
    static let firstObjectID: Int64 = 102

    /// What `<databaseInfo>` says.
    struct Header {
        var uuid: String?
        /// As the file says it: the last object number given out.
        var nextObjectID: Int64
        var plist: [String: PropertyListValue]

        /// The store metadata: the plist with `NSStoreType` and `NSStoreUUID`.
        var metadata: [String: PropertyListValue] {
            var metadata = plist
            if metadata[StoreMetadata.Key.storeType] == nil { metadata[StoreMetadata.Key.storeType] = .string(StoreMetadata.xmlStoreType) }
            if let uuid { metadata[StoreMetadata.Key.storeUUID] = .string(uuid) }
            return metadata
        }
    }

    // MARK: Reading

    /// Reads only the header; the rest of the file is never parsed.
    static func readMetadata(at url: URL) throws -> [String: PropertyListValue] {
        try readHeader(XMLStreamReader(path: url.path)).metadata
    }

    /// Moves `reader` through `<database>` and `<databaseInfo>`, leaving it on the latter's end.
    static func readHeader(_ reader: XMLStreamReader) throws -> Header {
        var sawDatabase = false
        while try reader.read() {
            if reader.nodeType == Int32(XML_READER_TYPE_ELEMENT.rawValue) {
                if !sawDatabase {
                    guard reader.isStartElement("database") else {
                        throw StoreError(.notAStore, path: reader.path, "line \(reader.line): the root element is <\(reader.name)>, not <database>: this is not a Core Data XML store")
                    }
                    sawDatabase = true
                    if reader.isEmptyElement { break }
                } else if reader.isStartElement("databaseInfo") {
                    return try readDatabaseInfo(reader)
                } else {
                    break
                }
            }
        }
        throw StoreError(.notAStore, path: reader.path, "line \(reader.line): no <databaseInfo> at the start of <database>: this is not a Core Data XML store")
    }

    private static func readDatabaseInfo(_ reader: XMLStreamReader) throws -> Header {
        var header = Header(uuid: nil, nextObjectID: firstObjectID - 1, plist: [:])
        var version: Int64?
        while try reader.read() {
            if reader.isEndElement("databaseInfo") { break }
            guard reader.nodeType == Int32(XML_READER_TYPE_ELEMENT.rawValue) else { continue }
            let line = reader.line
            switch reader.name {
            case "version":
                version = Int64(try reader.elementText().trimmingCharacters(in: .whitespacesAndNewlines))
            case "UUID":
                header.uuid = try reader.elementText().trimmingCharacters(in: .whitespacesAndNewlines)
            case "nextObjectID":
                let text = try reader.elementText().trimmingCharacters(in: .whitespacesAndNewlines)
                guard let next = Int64(text) else {
                    throw StoreError(.notAStore, path: reader.path, "line \(line): <nextObjectID> is '\(text)', not a number")
                }
                header.nextObjectID = next
            case "metadata":
                header.plist = try readMetadataElement(reader)
            default:
                try reader.skipElement()
            }
        }
        guard version == formatVersion else {
            throw StoreError(.notAStore, path: reader.path, "<databaseInfo> gives version \(version.map(String.init) ?? "none"), not \(formatVersion): the file was written by an incompatible version of Core Data")
        }
        return header
    }

    private static func readMetadataElement(_ reader: XMLStreamReader) throws -> [String: PropertyListValue] {
        guard !reader.isEmptyElement else { return [:] }
        var plist: [String: PropertyListValue] = [:]
        while try reader.read() {
            if reader.isEndElement("metadata") { break }
            if reader.isStartElement("plist") {
                let line = reader.line
                let xml = try reader.outerXML()
                guard let decoded = try? PropertyListValue.decode(Data(xml.utf8)), let dictionary = decoded.dictionaryValue else {
                    throw StoreError(.notAStore, path: reader.path, "line \(line): <metadata> does not hold a property list dictionary")
                }
                plist = dictionary
            }
        }
        return plist
    }

    /// One `<object>` as read, before its relationships' IDs are resolved.
    private struct PendingObject {
        var id: String
        var entity: String
        var line: Int
        var attributes: [String: AttributeValue] = [:]
        var relationships: [(relationship: RelationshipDescription, ids: [Substring], line: Int)] = []
    }

    /// Reads the whole store. Entities and properties are found in `model` by name without
    /// regard to case; an object of an entity, or a property, the model does not have is
    /// refused, as is a relationship naming an object the file does not have.
    static func read(at url: URL, model: ManagedObjectModel) throws -> AtomicStoreContents {
        let names = try XMLStoreNames(model: model, path: url.path)
        let reader = try XMLStreamReader(path: url.path)
        let header = try readHeader(reader)
        var pending: [PendingObject] = []
        var seenIDs: Set<String> = []
        while try reader.read() {
            if reader.isStartElement("object") {
                let object = try readObject(reader, names: names, model: model)
                guard seenIDs.insert(object.id).inserted else {
                    throw StoreError(.notAStore, path: url.path, "line \(object.line): a second object with id '\(object.id)'")
                }
                pending.append(object)
            } else if reader.isEndElement("database") {
                break
            }
        }
        return AtomicStoreContents(metadata: header.metadata, graph: try resolve(pending, nextObjectID: header.nextObjectID, model: model, path: url.path))
    }

    private static func readObject(_ reader: XMLStreamReader, names: XMLStoreNames, model: ManagedObjectModel) throws -> PendingObject {
        let line = reader.line
        guard let type = reader.attribute("type"), let id = reader.attribute("id"), !id.isEmpty else {
            throw StoreError(.notAStore, path: reader.path, "line \(line): an <object> without type or id")
        }
        guard let entity = names.entity(type) else {
            throw StoreError(.modelMismatch(entities: [type]), path: reader.path, "line \(line): object \(id) is of type \(type), which the model has no entity for; open the store with the model it was made with")
        }
        var object = PendingObject(id: id, entity: entity, line: line)
        guard !reader.isEmptyElement else { return object }
        while try reader.read() {
            if reader.isEndElement("object") { break }
            guard reader.nodeType == Int32(XML_READER_TYPE_ELEMENT.rawValue) else { continue }
            let propertyLine = reader.line
            let name = reader.attribute("name") ?? ""
            if reader.isStartElement("attribute") {
                let written = reader.attribute("type") ?? "?"
                let text = try reader.elementText()
                guard let attribute = names.attribute(name, of: entity) else {
                    if names.isTransient(name, of: entity) { continue }
                    throw StoreError(.modelMismatch(entities: [entity]), path: reader.path, "line \(propertyLine): object \(id) has an attribute '\(name)' that entity \(entity) does not have; open the store with the model it was made with")
                }
                guard let value = XMLStoreValueCoding.value(text, as: attribute.type) else {
                    throw StoreError(.notAStore, path: reader.path, "line \(propertyLine): object \(id), attribute \(attribute.name): '\(text.prefix(40))' (written as \(written)) is not a valid \(attribute.type.rawValue) value")
                }
                object.attributes[attribute.name] = value
            } else if reader.isStartElement("relationship") {
                let idrefs = reader.attribute("idrefs") ?? ""
                try reader.skipElement()
                guard let relationship = names.relationship(name, of: entity) else {
                    if names.isTransient(name, of: entity) { continue }
                    throw StoreError(.modelMismatch(entities: [entity]), path: reader.path, "line \(propertyLine): object \(id) has a relationship '\(name)' that entity \(entity) does not have; open the store with the model it was made with")
                }
                let ids = idrefs.split(whereSeparator: \.isWhitespace)
                if !relationship.isToMany && ids.count > 1 {
                    throw StoreError(.notAStore, path: reader.path, "line \(propertyLine): object \(id), to-one relationship \(relationship.name) names \(ids.count) objects")
                }
                object.relationships.append((relationship, ids, propertyLine))
            } else {
                try reader.skipElement()
            }
        }
        return object
    }

    /// Gives every object its key (`z<N>` is N; other IDs get the keys after `nextObjectID`) and
    /// turns `idrefs` into keys.
    private static func resolve(_ pending: [PendingObject], nextObjectID: Int64, model: ManagedObjectModel, path: String) throws -> AtomicObjectGraph {
        var keys: [String: Int64] = [:]
        keys.reserveCapacity(pending.count)
        var external: [String] = []
        var next = nextObjectID + 1
        for object in pending {
            if let key = zKey(object.id) {
                keys[object.id] = key
                next = max(next, key + 1)
            } else {
                external.append(object.id)
            }
        }
        var graph = AtomicObjectGraph(nextKey: next)
        for id in external {
            let key = graph.reserveKeys(1).lowerBound
            keys[id] = key
            graph.externalIDs[key] = id
        }
        var entities: [Int64: String] = [:]
        entities.reserveCapacity(pending.count)
        for object in pending { entities[keys[object.id]!] = object.entity }
        for object in pending {
            var stored = AtomicObject(entity: object.entity, attributes: object.attributes)
            for (relationship, ids, line) in object.relationships {
                var destinations: OrderedSet<Int64> = []
                for id in ids {
                    guard let key = keys[String(id)], let destinationEntity = entities[key] else {
                        throw StoreError(.notAStore, path: path, "line \(line): object \(object.id), relationship \(relationship.name) names '\(id)', which is not an object in this file")
                    }
                    guard model.entity(destinationEntity, isKindOf: relationship.destinationEntityName) else {
                        throw StoreError(.notAStore, path: path, "line \(line): object \(object.id), relationship \(relationship.name) names \(id), a \(destinationEntity), not a \(relationship.destinationEntityName)")
                    }
                    destinations.append(key)
                }
                if relationship.isToMany {
                    stored.toMany[relationship.name] = destinations
                } else if let destination = destinations.first {
                    stored.toOne[relationship.name] = destination
                }
            }
            graph.set(stored, for: keys[object.id]!)
        }
        return graph
    }

    /// N for a canonical `z<N>` ID.
    static func zKey(_ id: String) -> Int64? {
        guard id.first == "z", id.count > 1, id.dropFirst().first != "0", id.dropFirst().allSatisfy(\.isASCII) else { return nil }
        return Int64(id.dropFirst()).flatMap { $0 > 0 ? $0 : nil }
    }
}
