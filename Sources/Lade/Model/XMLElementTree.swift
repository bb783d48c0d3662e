import CLibXML2
import Foundation

/// A small, immutable element tree read with libxml2, keeping each element's line so that
/// model problems can point at the source. Models are small; stores are read by a streaming
/// reader elsewhere.
struct XMLElementTree: Sendable {
    var name: String
    var attributes: [String: String]
    var children: [XMLElementTree]
    var line: Int
    /// The element's own text and CDATA, joined (not its children's).
    var text: String = ""

    subscript(attribute: String) -> String? { attributes[attribute] }

    func children(named name: String) -> [XMLElementTree] {
        children.filter { $0.name == name }
    }

    /// Parses `data` as XML. Network access and external entities are refused; a document
    /// type declaration too, unless `externalDocumentType` allows one that only names an
    /// external DTD (never loaded), as Core Data's XML stores do.
    static func parse(_ data: Data, file: String, externalDocumentType: Bool = false) throws -> XMLElementTree {
        // Xcode never writes a document type declaration into a model; one with entities can
        // expand a small file into gigabytes ("billion laughs"), so a DTD is refused outright.
        if let (at, internalSubset) = documentType(in: data), internalSubset || !externalDocumentType {
            let line = data[..<at].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            if externalDocumentType {
                throw ModelError(file: file, line: line, "the document type declaration declares its own entities ([ … ]), which Core Data's XML files never do; Lade refuses it")
            }
            if data[at...].starts(with: Data("<!DOCTYPE database".utf8)) {
                throw ModelError(file: file, line: line, "this is a Core Data XML store, not a model: name the store's model with \(ModelLoader.namingAdvice)")
            }
            throw ModelError(file: file, line: line, "the model has a document type declaration (<!DOCTYPE …>), which Xcode never writes; Lade refuses DTDs and entities in models: remove it")
        }
        xmlInitParser()
        guard let context = xmlNewParserCtxt() else {
            throw ModelError(file: file, "libxml2 could not make a parser context (out of memory?)")
        }
        defer { xmlFreeParserCtxt(context) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        // libxml2 keeps only its last error (often "premature end of data" at the end of the
        // file); the first one is where the document went wrong. The structured error handler
        // is per thread in libxml2, so setting it around one parse is safe.
        let collector = FirstXMLError()
        let collectorPointer = Unmanaged.passRetained(collector).toOpaque()
        xmlSetStructuredErrorFunc(collectorPointer) { context, error in
            guard let context, let error else { return }
            let collector = Unmanaged<FirstXMLError>.fromOpaque(context).takeUnretainedValue()
            guard collector.message == nil, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
            collector.message = error.pointee.message.map { String(cString: $0) }?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "malformed XML"
            collector.line = Int(error.pointee.line)
            collector.column = Int(error.pointee.int2)
        }
        let document = data.withUnsafeBytes { buffer -> xmlDocPtr? in
            guard let base = buffer.baseAddress else { return nil }
            return xmlCtxtReadMemory(context, base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), file, nil, options)
        }
        xmlSetStructuredErrorFunc(nil, nil)
        Unmanaged<FirstXMLError>.fromOpaque(collectorPointer).release()
        guard let document else {
            if let message = collector.message {
                let column = collector.column > 0 ? " at column \(collector.column)" : ""
                throw ModelError(file: file, line: collector.line, "XML error\(column): \(message)")
            }
            throw ModelError(file: file, "the file is empty or is not XML")
        }
        defer { xmlFreeDoc(document) }
        guard let root = xmlDocGetRootElement(document) else {
            throw ModelError(file: file, "the XML document has no root element")
        }
        return element(root)
    }

    /// Where `data`'s document type declaration starts, and whether it has an internal subset
    /// (`[ … ]`, where entities are declared); nil without one.
    static func documentType(in data: Data) -> (offset: Data.Index, internalSubset: Bool)? {
        guard let doctype = data.firstRange(of: Data("<!DOCTYPE".utf8)) else { return nil }
        let rest = data[doctype.upperBound...]
        let bracket = rest.firstIndex(of: UInt8(ascii: "[")), close = rest.firstIndex(of: UInt8(ascii: ">"))
        return (doctype.lowerBound, bracket.map { bracket in close.map { bracket < $0 } ?? true } ?? false)
    }

    private static func element(_ node: xmlNodePtr) -> XMLElementTree {
        var attributes: [String: String] = [:]
        var property = node.pointee.properties
        while let attribute = property {
            let key = String(cString: attribute.pointee.name)
            var value = ""
            var text = attribute.pointee.children
            while let part = text {
                if let content = part.pointee.content { value += String(cString: content) }
                text = part.pointee.next
            }
            attributes[key] = value
            property = attribute.pointee.next
        }
        var children: [XMLElementTree] = []
        var text = ""
        var child = node.pointee.children
        while let current = child {
            if current.pointee.type == XML_ELEMENT_NODE {
                children.append(element(current))
            } else if current.pointee.type == XML_TEXT_NODE || current.pointee.type == XML_CDATA_SECTION_NODE, let content = current.pointee.content {
                text += String(cString: content)
            }
            child = current.pointee.next
        }
        return XMLElementTree(
            name: String(cString: node.pointee.name), attributes: attributes, children: children,
            line: Int(xmlGetLineNo(node)), text: text)
    }
}

/// The first error libxml2 reports while parsing one document.
private final class FirstXMLError {
    var message: String?
    var line = 0
    var column = 0
}
