import CLibXML2
import Foundation

/// A forward-only reader over an XML file (libxml2's `xmlTextReader`): memory stays flat
/// however large the file, and reading can stop anywhere, e.g. after a store's header.
///
/// ```swift
/// let reader = try XMLStreamReader(path: "catalog.xml")
/// while try reader.read() where reader.isStartElement("object") { print(reader.attribute("id") ?? "") }
/// ```
///
/// External DTDs and entities are never loaded (`XML_PARSE_NONET`, no entity substitution), so
/// a file cannot make the reader fetch or include anything.
///
/// Related libxml2 documentation: <https://gnome.pages.gitlab.gnome.org/libxml2/html/libxml-xmlreader.html>
final class XMLStreamReader {
    let path: String
    private let reader: xmlTextReaderPtr
    private let errors = ErrorBox()

    private final class ErrorBox {
        var message: String?
        var line = 0
    }

    init(path: String) throws {
        self.path = path
        try Self.refuseInternalSubset(path)
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_HUGE.rawValue | XML_PARSE_COMPACT.rawValue | XML_PARSE_BIG_LINES.rawValue)
        guard let reader = xmlReaderForFile(path, nil, options) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be opened for reading (check its permissions)" : "no such file"
            throw StoreError(FileManager.default.fileExists(atPath: path) ? .io : .notFound, path: path, reason)
        }
        self.reader = reader
        // Parse errors are kept (the first one) instead of being printed on stderr.
        xmlTextReaderSetStructuredErrorHandler(reader, { context, error in
            guard let context, let error else { return }
            let box = Unmanaged<ErrorBox>.fromOpaque(context).takeUnretainedValue()
            guard box.message == nil else { return }
            box.message = error.pointee.message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "malformed XML"
            box.line = Int(error.pointee.line)
        }, Unmanaged.passUnretained(errors).toOpaque())
    }

    deinit {
        xmlFreeTextReader(reader)
    }

    /// Apple's XML stores name an external DTD (`<!DOCTYPE database SYSTEM "…CoreData.dtd">`),
    /// which is never loaded. A document type declaration with an internal subset (`[ … ]`) can
    /// declare entities that expand a small file into gigabytes, so it is refused before parsing.
    private static func refuseInternalSubset(_ path: String) throws {
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 65_536)) ?? Data()
        if let (at, internalSubset) = XMLElementTree.documentType(in: head), internalSubset {
            let line = head[..<at].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
            throw StoreError(.notAStore, path: path, "line \(line): the document type declaration declares its own entities ([ … ]), which Core Data's XML stores never do; Lade refuses it")
        }
    }

    /// Moves to the next node; false at the end of the document.
    func read() throws -> Bool {
        switch xmlTextReaderRead(reader) {
        case 1: return true
        case 0: return false
        default:
            let line = errors.line > 0 ? errors.line : Int(xmlTextReaderGetParserLineNumber(reader))
            throw StoreError(.notAStore, path: path, "line \(line): the XML is malformed (\(errors.message ?? "parse error")); the file is damaged or not an XML store")
        }
    }

    /// libxml2's `xmlReaderTypes` value of the current node.
    var nodeType: Int32 { xmlTextReaderNodeType(reader) }
    var depth: Int32 { xmlTextReaderDepth(reader) }
    var isEmptyElement: Bool { xmlTextReaderIsEmptyElement(reader) == 1 }
    /// The line of the current node (the parser itself may have read further).
    var line: Int {
        if let node = xmlTextReaderCurrentNode(reader) {
            let line = xmlGetLineNo(node)
            if line > 0 { return line }
        }
        return Int(xmlTextReaderGetParserLineNumber(reader))
    }

    var name: String {
        xmlTextReaderConstName(reader).map { String(cString: $0) } ?? ""
    }

    /// The text of a text, whitespace or CDATA node.
    var value: String {
        xmlTextReaderConstValue(reader).map { String(cString: $0) } ?? ""
    }

    func isStartElement(_ name: StaticString) -> Bool {
        nodeType == Int32(XML_READER_TYPE_ELEMENT.rawValue) && hasName(name)
    }

    func isEndElement(_ name: StaticString) -> Bool {
        nodeType == Int32(XML_READER_TYPE_END_ELEMENT.rawValue) && hasName(name)
    }

    private func hasName(_ name: StaticString) -> Bool {
        guard let current = xmlTextReaderConstName(reader) else { return false }
        return name.withUTF8Buffer { expected in
            strcmp(UnsafeRawPointer(current).assumingMemoryBound(to: CChar.self), UnsafeRawPointer(expected.baseAddress!).assumingMemoryBound(to: CChar.self)) == 0
        }
    }

    /// An attribute of the current element, or nil.
    func attribute(_ name: String) -> String? {
        guard xmlTextReaderMoveToAttribute(reader, name) == 1 else { return nil }
        defer { xmlTextReaderMoveToElement(reader) }
        return value
    }

    /// Every attribute of the current element, in document order.
    func attributes() -> [(name: String, value: String)] {
        var all: [(String, String)] = []
        guard xmlTextReaderMoveToFirstAttribute(reader) == 1 else { return [] }
        repeat { all.append((name, value)) } while xmlTextReaderMoveToNextAttribute(reader) == 1
        xmlTextReaderMoveToElement(reader)
        return all
    }

    /// The text inside the current element (which must hold text only), leaving the reader on
    /// its end; "" for an empty element.
    func elementText() throws -> String {
        guard !isEmptyElement else { return "" }
        let element = name
        var text = ""
        while try read() {
            switch nodeType {
            case Int32(XML_READER_TYPE_TEXT.rawValue), Int32(XML_READER_TYPE_CDATA.rawValue),
                 Int32(XML_READER_TYPE_WHITESPACE.rawValue), Int32(XML_READER_TYPE_SIGNIFICANT_WHITESPACE.rawValue):
                text += value
            case Int32(XML_READER_TYPE_END_ELEMENT.rawValue):
                return text
            case Int32(XML_READER_TYPE_COMMENT.rawValue), Int32(XML_READER_TYPE_PROCESSING_INSTRUCTION.rawValue):
                continue
            default:
                throw StoreError(.notAStore, path: path, "line \(line): <\(element)> should hold text only, but holds <\(name)>")
            }
        }
        throw StoreError(.notAStore, path: path, "line \(line): the file ends inside <\(element)>; it is truncated")
    }

    /// The current element and everything inside it, as XML text, leaving the reader on the
    /// element's end.
    func outerXML() throws -> String {
        guard let text = xmlTextReaderReadOuterXml(reader) else {
            throw StoreError(.notAStore, path: path, "line \(line): cannot read <\(name)>")
        }
        defer { free(text) }
        let xml = String(cString: text)
        try skipElement()
        return xml
    }

    /// Moves to the end of the current element, past everything inside it.
    func skipElement() throws {
        guard !isEmptyElement else { return }
        let element = name, level = depth
        while try read() {
            if nodeType == Int32(XML_READER_TYPE_END_ELEMENT.rawValue) && depth == level { return }
        }
        throw StoreError(.notAStore, path: path, "line \(line): the file ends inside <\(element)>; it is truncated")
    }
}
