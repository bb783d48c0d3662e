import CLibXML2
import Foundation

/// Writes XML to a file descriptor with libxml2's `xmlTextWriter`, which escapes text and
/// attribute values; indentation is written explicitly (`newline(indent:)`), so the layout
/// is exactly the one asked for.
///
/// ```swift
/// let writer = try XMLStreamWriter(descriptor: fd, path: path)
/// try writer.start("database"); try writer.text("…"); try writer.end(); try writer.finish()
/// ```
///
/// Related libxml2 documentation: <https://gnome.pages.gitlab.gnome.org/libxml2/html/libxml-xmlwriter.html>
final class XMLStreamWriter {
    let path: String
    private let writer: xmlTextWriterPtr

    /// Writes to `descriptor`, which stays open (the caller flushes and closes it).
    init(descriptor: Int32, path: String) throws {
        self.path = path
        guard let buffer = xmlOutputBufferCreateFd(descriptor, nil), let writer = xmlNewTextWriter(buffer) else {
            throw StoreError(.io, path: path, "cannot start writing XML (out of memory?)")
        }
        self.writer = writer
    }

    deinit {
        xmlFreeTextWriter(writer)
    }

    private func check(_ result: Int32, _ what: @autoclosure () -> String) throws {
        guard result >= 0 else {
            let code = errno
            let hint = code == ENOSPC ? " (the disk is full; free some space and save again)" : ""
            throw StoreError(.io, path: path, "cannot write \(what()): \(String(cString: strerror(code)))\(hint); the store is unchanged")
        }
    }

    /// `<?xml version="1.0" standalone="yes"?>`, UTF-8.
    func startDocument(standalone: Bool) throws {
        try check(xmlTextWriterStartDocument(writer, "1.0", nil, standalone ? "yes" : nil), "the XML declaration")
    }

    /// `<!DOCTYPE name SYSTEM "systemID">`.
    func doctype(_ name: String, systemID: String) throws {
        try check(xmlTextWriterWriteDTD(writer, name, nil, systemID, nil), "the DOCTYPE")
    }

    /// Text written as is (only for markup-free text such as line breaks).
    func raw(_ text: String) throws {
        try check(xmlTextWriterWriteRaw(writer, text), "the file")
    }

    /// A line break and `indent` levels of four spaces.
    func newline(indent: Int) throws {
        try raw("\n" + String(repeating: "    ", count: indent))
    }

    func start(_ name: String) throws {
        try check(xmlTextWriterStartElement(writer, name), "<\(name)>")
    }

    func attribute(_ name: String, _ value: String) throws {
        try check(xmlTextWriterWriteAttribute(writer, name, value), "the attribute \(name)")
    }

    /// Text content, escaped (`<`, `&`, `>`, and `\r` as `&#13;` so it survives reading).
    func text(_ content: String) throws {
        try check(xmlTextWriterWriteString(writer, content), "text")
    }

    func cdata(_ content: String) throws {
        try check(xmlTextWriterWriteCDATA(writer, content), "a CDATA section")
    }

    func comment(_ content: String) throws {
        try check(xmlTextWriterWriteComment(writer, content), "a comment")
    }

    /// Closes the current element with an end tag (`<a></a>`, never `<a/>`), as Core Data writes.
    func end() throws {
        try check(xmlTextWriterFullEndElement(writer), "an end tag")
    }

    /// Closes the current element as `<a/>` when it is empty.
    func endCompact() throws {
        try check(xmlTextWriterEndElement(writer), "an end tag")
    }

    /// An element holding only `content`.
    func element(_ name: String, _ content: String) throws {
        try start(name)
        try text(content)
        try end()
    }

    /// Writes out everything buffered.
    func finish() throws {
        try check(xmlTextWriterFlush(writer), "the end of the file")
    }
}
