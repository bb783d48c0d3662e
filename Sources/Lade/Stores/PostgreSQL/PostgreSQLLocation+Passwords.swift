import CLibPQ
import Foundation

/// Where a password is in the text that names a PostgreSQL store, however it is written: in a
/// URL's user part, as a `password=` query parameter, or in a libpq `key=value` connection
/// string; percent-encoded or written raw, with `@ : / % ? & #` in it unencoded.
///
/// A URL is read the way that hides the most: a password's user part runs from the first `:`
/// after `//` to the last `@` before the host, and when an `@` follows a `/`, `?`, `#` or
/// another `@` the host cannot be told, so it runs to the last `@` of the text. A `password=`
/// value runs to the `&` (or, in a connection string, the space) after which only parameters
/// libpq knows follow, each once; without one, to the end of the text. Where this reading and
/// libpq's could differ (``PasswordReading/isAmbiguous``), the location is refused: libpq
/// would take part of the password for a host, port or database name, and quote it back.
///
/// ```swift
/// PostgreSQLLocation.redact("postgresql://app:p@ss:w/rd%?&x#y@db/catalog")   // "postgresql://app:***@db/catalog"
/// PostgreSQLLocation.redact("postgresql://app@db/catalog?password=s3cret&schema=feed")   // "…?password=***&schema=feed"
/// ```
extension PostgreSQLLocation {
    /// The passwords of one text: where they are, and whether libpq could read them otherwise.
    struct PasswordReading {
        /// The ranges of the text that hold a password or may, merged and in order.
        var ranges: [Range<String.Index>] = []
        /// Whether libpq could read a password's end elsewhere, and so show part of it as a
        /// host, port, database or parameter.
        var isAmbiguous = false

        init(_ text: String) {
            if let schemeEnd = text.range(of: "://") {
                readURL(text, from: schemeEnd.upperBound)
            } else if Self.connectionParameter(in: text, at: text.startIndex) != nil {
                readConnectionString(text)
            }
            ranges = Self.merged(ranges.filter { !$0.isEmpty })
        }

        /// The user part's password, and every `password=` parameter.
        private mutating func readURL(_ text: String, from start: String.Index) {
            let authorityEnd = text[start...].firstIndex(where: { "/?#".contains($0) }) ?? text.endIndex
            let lastAt: String.Index?
            if let at = text[start..<authorityEnd].lastIndex(of: "@"), !text[authorityEnd...].contains("@") {
                lastAt = at
            } else {
                lastAt = text[start...].lastIndex(of: "@")
            }
            if let lastAt, let colon = text[start..<lastAt].firstIndex(of: ":") {
                ranges.append(text.index(after: colon)..<lastAt)
                // libpq ends the user part at the first `@` (or at a `/` before it).
                if text[start..<lastAt].contains(where: { "@/?#".contains($0) }) { isAmbiguous = true }
            }
            var seen: [String] = []
            var index = start
            while let separator = text[index...].firstIndex(where: { $0 == "?" || $0 == "&" }) {
                let keyStart = text.index(after: separator)
                index = keyStart
                guard let equals = text[keyStart...].firstIndex(where: { $0 == "=" || $0 == "&" }), text[equals] == "=" else { continue }
                let key = String(text[keyStart..<equals])
                let name = (key.removingPercentEncoding ?? key).lowercased()
                guard name == "password" else {
                    seen.append(name)
                    continue
                }
                let valueStart = text.index(after: equals)
                let valueEnd = Self.valueEnd(in: text, from: valueStart, boundaries: { $0 == "&" }, seen: seen, rest: Self.queryKeys)
                ranges.append(valueStart..<valueEnd)
                if text[valueStart..<valueEnd].contains(where: { $0 == "&" || $0 == "#" }) { isAmbiguous = true }
                index = valueEnd
                if index == text.endIndex { break }
            }
        }

        /// Every `password = value` of a libpq connection string (`host=db password=…`).
        private mutating func readConnectionString(_ text: String) {
            var seen: [String] = []
            var index = text.startIndex
            while index < text.endIndex {
                guard let token = Self.connectionParameter(in: text, at: index) else {
                    // Not a connection string libpq reads: anything from here may be a password.
                    if text[index...].range(of: "password", options: .caseInsensitive) != nil {
                        ranges.append(index..<text.endIndex)
                    }
                    return
                }
                if token.key.lowercased() == "password" {
                    let end = token.isQuoted
                        ? token.end
                        : Self.valueEnd(in: text, from: token.valueStart, boundaries: { $0.isWhitespace }, seen: seen, rest: Self.connectionKeys)
                    ranges.append(token.valueStart..<end)
                    if end != token.end { isAmbiguous = true }
                    index = end
                } else {
                    seen.append(token.key.lowercased())
                    index = token.end
                }
            }
        }

        /// Where a password value that starts at `start` ends: at the first boundary after which
        /// `rest` reads only parameters libpq knows, none named before (`seen`) or twice; the
        /// end of the text when there is none.
        private static func valueEnd(in text: String, from start: String.Index, boundaries: (Character) -> Bool,
                                     seen: [String], rest: (Substring) -> [String]?) -> String.Index {
            var index = start
            while let boundary = text[index...].firstIndex(where: boundaries) {
                if let keys = rest(text[boundary...]), !keys.isEmpty, Set(keys).count == keys.count, Set(keys).isDisjoint(with: seen) {
                    return boundary
                }
                index = text.index(after: boundary)
            }
            return text.endIndex
        }

        /// The keys of `&key=value&…` when each is one libpq knows (or `schema`) and no `#`
        /// follows; nil otherwise.
        private static func queryKeys(_ rest: Substring) -> [String]? {
            guard !rest.contains("#") else { return nil }
            var keys: [String] = []
            for parameter in rest.split(separator: "&", omittingEmptySubsequences: true) {
                guard let equals = parameter.firstIndex(of: "=") else { return nil }
                let key = String(parameter[..<equals])
                let name = (key.removingPercentEncoding ?? key).lowercased()
                guard knownKeywords.contains(name) else { return nil }
                keys.append(name)
            }
            return keys
        }

        /// The keys of ` key=value …` when each is one libpq knows; nil otherwise.
        private static func connectionKeys(_ rest: Substring) -> [String]? {
            let text = String(rest)
            var keys: [String] = []
            var index = text.startIndex
            while !text[index...].allSatisfy(\.isWhitespace) {
                guard let token = connectionParameter(in: text, at: index) else { return nil }
                keys.append(token.key.lowercased())
                index = token.end
            }
            return keys
        }

        /// One `key = value` of a connection string at `start` (spaces before it skipped), as
        /// libpq reads it: a value in single quotes with `\` escapes, or up to a space; nil when
        /// the key is not one libpq knows or there is no `=`.
        static func connectionParameter(in text: String, at start: String.Index)
            -> (key: String, valueStart: String.Index, end: String.Index, isQuoted: Bool)? {
            var index = start
            func skipSpaces() { while index < text.endIndex, text[index].isWhitespace { index = text.index(after: index) } }
            skipSpaces()
            guard index < text.endIndex else { return nil }
            let keyStart = index
            while index < text.endIndex, !text[index].isWhitespace, text[index] != "=" { index = text.index(after: index) }
            let key = String(text[keyStart..<index])
            skipSpaces()
            guard index < text.endIndex, text[index] == "=", knownKeywords.contains(key.lowercased()) else { return nil }
            index = text.index(after: index)
            skipSpaces()
            let valueStart = index
            let isQuoted = index < text.endIndex && text[index] == "'"
            if isQuoted {
                index = text.index(after: index)
                while index < text.endIndex, text[index] != "'" {
                    if text[index] == "\\" { index = text.index(after: index); if index == text.endIndex { break } }
                    index = text.index(after: index)
                }
                if index < text.endIndex { index = text.index(after: index) }
            } else {
                while index < text.endIndex, !text[index].isWhitespace {
                    if text[index] == "\\" { index = text.index(after: index); if index == text.endIndex { break } }
                    index = text.index(after: index)
                }
            }
            return (key, valueStart, index, isQuoted)
        }

        /// The connection keywords libpq knows (`PQconndefaults`), and Lade's `schema`.
        static let knownKeywords: Set<String> = {
            var names: Set<String> = ["schema"]
            guard let defaults = PQconndefaults() else { return names.union(["password", "host", "port", "dbname", "user"]) }
            defer { PQconninfoFree(defaults) }
            var option = defaults
            while let keyword = option.pointee.keyword {
                names.insert(String(cString: keyword).lowercased())
                option += 1
            }
            return names
        }()

        private static func merged(_ ranges: [Range<String.Index>]) -> [Range<String.Index>] {
            var result: [Range<String.Index>] = []
            for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
                if let last = result.last, range.lowerBound <= last.upperBound {
                    result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
                } else {
                    result.append(range)
                }
            }
            return result
        }
    }

    /// `text` with every password in it, or what may be one, shown as `***`: a URL's user part
    /// and `password=` parameters, or a connection string's `password=` values.
    package static func redact(_ text: String) -> String {
        var result = text
        for range in PasswordReading(text).ranges.reversed() { result.replaceSubrange(range, with: "***") }
        return result
    }

    /// Whether `text` carries a password (an empty one carries none), checked without libpq, so
    /// a URL that is wrong in other ways is still caught.
    package static func carriesPassword(_ text: String) -> Bool {
        (isPostgreSQLURL(text) || isConnectionString(text)) && !PasswordReading(text).ranges.isEmpty
    }

    /// Whether `text`, not a URL, starts as a libpq `key=value` connection string does (a key
    /// libpq knows, then `=`): Lade names a store by URL, and such a text is never taken for a
    /// file (whose name would show its password).
    package static func isConnectionString(_ text: String) -> Bool {
        !isPostgreSQLURL(text) && PasswordReading.connectionParameter(in: text, at: text.startIndex) != nil
    }

    /// The passwords' text as written and percent-decoded, for taking them out of what libpq says.
    static func passwords(in text: String) -> [String] {
        PasswordReading(text).ranges.flatMap { range -> [String] in
            let raw = String(text[range])
            return [raw, raw.removingPercentEncoding].compactMap { $0 }.filter { !$0.isEmpty }
        }
    }
}
