import Foundation

extension FetchPredicate {
    /// Parses a predicate in Core Data's format-string syntax (Apple's "Predicate Format String
    /// Syntax"), with `%` arguments taken in order from `arguments`.
    ///
    /// ```swift
    /// let predicate = try FetchPredicate(format: "price < %@ AND name BEGINSWITH[cd] %@", arguments: [10, "bolt"])
    /// let byKey = try FetchPredicate(format: "%K == %d", arguments: ["category.name", 3])
    /// let tagged = try FetchPredicate(format: "ANY tags.name IN %@", arguments: [["red", "blue"]])
    /// let busy = try FetchPredicate(format: "SUBQUERY(items, $i, $i.price > 10).@count >= 2")
    /// let template = try FetchPredicate(format: "supplier.code == $CODE")   // substitute later
    /// ```
    ///
    /// Arguments: `%@` takes any `PredicateValue` (a string, number, date, object, nil, or a
    /// collection for `IN`/`BETWEEN`); `%K` a string naming a key path; `%d %i %ld %lld %u %lu`
    /// an integer; `%f %lf %g %e` a number (made a double); `%s` a string.
    ///
    /// Keywords are case-insensitive. `NOT` binds tightest, then `AND` (`&&`), then `OR`
    /// (`||`); both are left-associative. A reserved word is used as a key with `#`
    /// (`#IN == 1`). Arithmetic (`+ - * /`), functions (`FUNCTION`, `sum:`), index expressions
    /// (`items[0]`) and assignments are not supported and are reported as such.
    ///
    /// - Throws: `PredicateSyntaxError` naming the column and what was expected.
    public init(format: String, arguments: [PredicateValue]) throws(PredicateSyntaxError) {
        var parser = try PredicateParser(format: format, arguments: arguments)
        self = try parser.parseWhole()
    }

    /// Parses a predicate; see `init(format:arguments:)`.
    ///
    /// ```swift
    /// let predicate = try FetchPredicate(format: "name ==[c] %@ OR stock <= %d", "bolt", 3)
    /// ```
    public init(format: String, _ arguments: PredicateValue...) throws(PredicateSyntaxError) {
        try self.init(format: format, arguments: arguments)
    }
}

/// A recursive-descent parser over `PredicateLexer`'s tokens.
struct PredicateParser {
    private let format: String
    private let tokens: [PredicateToken]
    private let arguments: [PredicateValue]
    private var index = 0
    private var argumentIndex = 0
    private var depth = 0
    /// Deeper nesting is refused rather than risking the stack.
    static let maximumDepth = 200

    static let reserved: Set<String> = [
        "AND", "OR", "IN", "NOT", "ALL", "ANY", "SOME", "NONE", "LIKE", "CASEINSENSITIVE", "CI", "MATCHES",
        "CONTAINS", "BEGINSWITH", "ENDSWITH", "BETWEEN", "NULL", "NIL", "SELF", "TRUE", "YES", "FALSE", "NO",
        "FIRST", "LAST", "SIZE", "ANYKEY", "SUBQUERY", "FETCH", "CAST", "TRUEPREDICATE", "FALSEPREDICATE",
        "FUNCTION", "TERNARY",
    ]

    init(format: String, arguments: [PredicateValue]) throws(PredicateSyntaxError) {
        self.format = format
        self.tokens = try PredicateLexer.tokens(format)
        self.arguments = arguments
    }

    // MARK: Tokens

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func keyword(_ token: PredicateToken) -> String? { token.keyword }

    private func isKeyword(_ word: String) -> Bool { keyword(current) == word }

    private func isSymbol(_ symbol: String) -> Bool { current.kind == .symbol(symbol) }

    private func text(of token: PredicateToken) -> String { Self.text(of: token, in: format) }

    static func text(of token: PredicateToken, in format: String) -> String {
        guard token.kind != .end else { return "the end" }
        let bytes = format.utf8.dropFirst(token.offset).prefix(token.length)
        return "'" + String(decoding: bytes, as: UTF8.self) + "'"
    }

    private func error(_ message: String, at token: PredicateToken? = nil) -> PredicateSyntaxError {
        PredicateSyntaxError(message: message, column: PredicateLexer.column(of: (token ?? current).offset, in: format), format: format)
    }

    /// "after '=='" for the token before the current one, or "at the start".
    private var afterPrevious: String {
        index == 0 ? "at the start" : "after \(text(of: tokens[index - 1]))"
    }

    private mutating func expectSymbol(_ symbol: String, _ what: @autoclosure () -> String) throws(PredicateSyntaxError) {
        guard isSymbol(symbol) else { throw error("expected '\(symbol)' \(what()), found \(text(of: current))") }
        advance()
    }

    private mutating func nest() throws(PredicateSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("the predicate nests deeper than \(Self.maximumDepth) levels") }
    }

    // MARK: Predicates

    mutating func parseWhole() throws(PredicateSyntaxError) -> FetchPredicate {
        guard current.kind != .end else { throw error("expected a predicate; the format is empty") }
        let predicate = try parseOr()
        guard current.kind == .end else {
            throw error("expected AND, OR or the end after the predicate, found \(text(of: current))")
        }
        return predicate
    }

    private mutating func parseOr() throws(PredicateSyntaxError) -> FetchPredicate {
        try parseJunction(isOr: true)
    }

    /// `a OR b OR …` of AND-junctions, or `a AND b AND …` of negations.
    private mutating func parseJunction(isOr: Bool) throws(PredicateSyntaxError) -> FetchPredicate {
        let (word, symbol) = isOr ? ("OR", "||") : ("AND", "&&")
        var parts = [isOr ? try parseJunction(isOr: false) : try parseNot()]
        while isKeyword(word) || isSymbol(symbol) {
            advance()
            parts.append(isOr ? try parseJunction(isOr: false) : try parseNot())
        }
        return parts.count == 1 ? parts[0] : (isOr ? .or(parts) : .and(parts))
    }

    private mutating func parseNot() throws(PredicateSyntaxError) -> FetchPredicate {
        try nest()
        defer { depth -= 1 }
        if isKeyword("NOT") || isSymbol("!") {
            advance()
            guard current.kind != .end else { throw error("expected a predicate \(afterPrevious)") }
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(PredicateSyntaxError) -> FetchPredicate {
        if isKeyword("TRUEPREDICATE") { advance(); return .true }
        if isKeyword("FALSEPREDICATE") { advance(); return .false }
        if isSymbol("("), !parenthesisedExpressionFollowedByOperator() {
            // A parenthesised predicate; `(price) > 3` is a comparison instead.
            let open = current
            advance()
            let inner = try parseOr()
            let format = self.format
            try expectSymbol(")", "to close the '(' at column \(PredicateLexer.column(of: open.offset, in: format))")
            return inner
        }
        for (word, modifier) in [("ANY", ComparisonModifier.any), ("SOME", .any), ("ALL", .all), ("NONE", .any)] where isKeyword(word) {
            advance()
            guard case .comparison(let comparison) = try parseComparison() else { throw error("expected a comparison after \(word)") }
            var modified = comparison
            modified.modifier = modifier
            return word == "NONE" ? .not(.comparison(modified)) : .comparison(modified)
        }
        return try parseComparison()
    }

    /// Whether the tokens from here are `( … )` followed by a comparison operator.
    private mutating func parenthesisedExpressionFollowedByOperator() -> Bool {
        var level = 0
        var position = index
        repeat {
            switch tokens[position].kind {
            case .symbol("("): level += 1
            case .symbol(")"): level -= 1
            case .end: return false
            default: break
            }
            position += 1
        } while level > 0
        let saved = index
        index = position
        defer { index = saved }
        return operatorAhead() != nil
    }

    private mutating func parseComparison() throws(PredicateSyntaxError) -> FetchPredicate {
        guard current.kind != .end else { throw error("expected a predicate \(afterPrevious)") }
        let left = try parseExpression(role: "a value or key path")
        if keyword(current) == "NOT", keyword(tokens[index + 1]) == "IN" || keyword(tokens[index + 1]) == "BETWEEN" || keyword(tokens[index + 1]) == "LIKE" {
            throw error("NOT cannot come between a value and its operator; write NOT (a IN b)")
        }
        guard let op = operatorAhead() else {
            if current.kind == .end {
                throw error("expected a comparison operator (==, <, IN, BEGINSWITH…) \(afterPrevious)")
            }
            if case .symbol(let symbol) = current.kind, ["+", "-", "*", "/", "**"].contains(symbol) {
                throw error("arithmetic ('\(symbol)') is not supported in predicates")
            }
            throw error("expected a comparison operator (==, <, IN, BEGINSWITH…) after the value, found \(text(of: current))")
        }
        let operatorToken = current
        advance()
        var options: ComparisonOptions = []
        if isSymbol("[") {
            advance()
            guard case .identifier(let letters, _) = current.kind, !letters.isEmpty else {
                throw error("expected comparison options such as c, d or cd inside '[ ]'")
            }
            for letter in letters.lowercased() {
                switch letter {
                case "c": options.insert(.caseInsensitive)
                case "d": options.insert(.diacriticInsensitive)
                case "n": break
                default: throw error("unknown comparison option '\(letter)'; expected c, d or cd")
                }
            }
            advance()
            try expectSymbol("]", "after the comparison options")
        }
        guard current.kind != .end, !(isSymbol(")") || isKeyword("AND") || isKeyword("OR") || isSymbol("&&") || isSymbol("||")) else {
            throw error("expected a value after \(text(of: operatorToken))")
        }
        let format = self.format
        let right = try parseExpression(role: "a value after \(Self.text(of: operatorToken, in: format))")
        if case .symbol(let symbol) = current.kind, ["+", "-", "*", "/", "**"].contains(symbol) {
            throw error("arithmetic ('\(symbol)') is not supported in predicates")
        }
        return FetchPredicate.compare(left, op, right, options: options)
    }

    /// The comparison operator at the current token, if it is one.
    private func operatorAhead() -> ComparisonOperator? {
        switch current.kind {
        case .symbol(let symbol):
            switch symbol {
            case "==", "=": return .equal
            case "!=", "<>": return .notEqual
            case "<": return .lessThan
            case "<=", "=<": return .lessThanOrEqual
            case ">": return .greaterThan
            case ">=", "=>": return .greaterThanOrEqual
            default: return nil
            }
        default:
            switch keyword(current) {
            case "IN": return .in
            case "CONTAINS": return .contains
            case "BETWEEN": return .between
            case "BEGINSWITH": return .beginsWith
            case "ENDSWITH": return .endsWith
            case "LIKE": return .like
            case "MATCHES": return .matches
            default: return nil
            }
        }
    }

    // MARK: Expressions

    private mutating func parseExpression(role: @autoclosure () -> String) throws(PredicateSyntaxError) -> FetchExpression {
        try nest()
        defer { depth -= 1 }
        let start = current
        var expression: FetchExpression
        switch current.kind {
        case .end:
            throw error("expected \(role()) \(afterPrevious)")
        case .integer(let value):
            advance()
            expression = .constant(.integer(value))
        case .double(let value):
            advance()
            expression = .constant(.double(value))
        case .string(let value):
            advance()
            expression = .constant(.string(value))
        case .variable(let name):
            advance()
            expression = .variable(name)
        case .argument(let conversion):
            advance()
            expression = try argument(conversion, token: start)
        case .collectionOperator(let name):
            throw error("expected a key path before '@\(name)'")
        case .symbol("-"):
            advance()
            switch current.kind {
            case .integer(let value):
                advance()
                expression = .constant(.integer(-value))
            case .double(let value):
                advance()
                expression = .constant(.double(-value))
            default:
                throw error("arithmetic ('-') is not supported in predicates; only a number may follow a minus sign", at: start)
            }
        case .symbol("{"):
            advance()
            var members: [FetchExpression] = []
            if !isSymbol("}") {
                while true {
                    members.append(try parseExpression(role: "a value in the array"))
                    if isSymbol(",") { advance(); continue }
                    break
                }
            }
            try expectSymbol("}", "to close the array, or ',' between its values")
            expression = Self.constantFolded(members)
        case .symbol("("):
            advance()
            expression = try parseExpression(role: "a value after '('")
            let format = self.format
            try expectSymbol(")", "to close '(' at column \(PredicateLexer.column(of: start.offset, in: format))")
        case .identifier(let name, let escaped):
            advance()
            switch escaped ? nil : name.uppercased() {
            case "TRUE", "YES": expression = .constant(.bool(true))
            case "FALSE", "NO": expression = .constant(.bool(false))
            case "NULL", "NIL": expression = .constant(.null)
            case "SELF": expression = .evaluatedObject
            case "SUBQUERY": expression = try parseSubquery()
            case "CAST": expression = try parseCast(start)
            case "FUNCTION", "TERNARY", "ANYKEY", "FETCH", "FIRST", "LAST", "SIZE":
                throw error("\(name.uppercased()) is not supported in predicates", at: start)
            default:
                if Self.reserved.contains(name.uppercased()) && !escaped {
                    throw error("expected \(role()), found the keyword \(name.uppercased()) (write #\(name) for a key of that name)", at: start)
                }
                if isSymbol("(") || isSymbol(":") {
                    throw error("functions such as \(name)() are not supported in predicates", at: start)
                }
                expression = .keyPath([name])
            }
        default:
            throw error("expected \(role()), found \(text(of: start))")
        }
        return try parseKeyPathSuffix(expression)
    }

    /// `.key`, `.@count`, `.@sum.key` after an expression.
    private mutating func parseKeyPathSuffix(_ base: FetchExpression) throws(PredicateSyntaxError) -> FetchExpression {
        var expression = base
        while isSymbol(".") {
            advance()
            switch current.kind {
            case .identifier(let name, let escaped):
                if !escaped && Self.reserved.contains(name.uppercased()) && name.uppercased() != "SELF" {
                    throw error("expected a key after '.', found the keyword \(name.uppercased()) (write #\(name))")
                }
                let keyToken = current
                advance()
                switch expression {
                case .keyPath(let path): expression = .keyPath(path + [name])
                case .evaluatedObject: expression = .keyPath([name])
                case .variable(let variable): expression = .variableKeyPath(variable, [name])
                case .variableKeyPath(let variable, let path): expression = .variableKeyPath(variable, path + [name])
                case .collectionOperator(let op, let collection, let path) where op != .count:
                    expression = .collectionOperator(op, collection, path + [name])
                case .collectionOperator(.count, _, _):
                    throw error("nothing can follow @count", at: keyToken)
                default:
                    throw error("a key path cannot follow this value", at: keyToken)
                }
            case .collectionOperator(let name):
                guard let op = CollectionOperator(rawValue: "@" + name.lowercased()) else {
                    throw error("unknown collection operator '@\(name)'; expected @count, @sum, @avg, @min or @max")
                }
                advance()
                switch expression {
                case .collectionOperator:
                    throw error("a collection operator cannot follow another")
                case .constant(.collection), .aggregate, .subquery, .keyPath, .variableKeyPath, .evaluatedObject, .variable:
                    expression = .collectionOperator(op, expression, [])
                default:
                    throw error("'@\(name)' needs a collection before it")
                }
            default:
                throw error("expected a key or a collection operator after '.'")
            }
        }
        if isSymbol("[") {
            throw error("index expressions ([0], [FIRST]…) are not supported in predicates")
        }
        return expression
    }

    private mutating func parseSubquery() throws(PredicateSyntaxError) -> FetchExpression {
        try expectSymbol("(", "after SUBQUERY")
        let collection = try parseExpression(role: "a collection for SUBQUERY")
        try expectSymbol(",", "after the SUBQUERY's collection")
        guard case .variable(let variable) = current.kind else { throw error("expected a $variable as SUBQUERY's second argument") }
        advance()
        try expectSymbol(",", "after the SUBQUERY's variable")
        let predicate = try parseOr()
        try expectSymbol(")", "to close SUBQUERY")
        return .subquery(collection, variable: variable, predicate)
    }

    private mutating func parseCast(_ start: PredicateToken) throws(PredicateSyntaxError) -> FetchExpression {
        try expectSymbol("(", "after CAST")
        let value = try parseExpression(role: "a value to CAST")
        try expectSymbol(",", "after the value to CAST")
        guard case .string(let type) = current.kind else { throw error("expected a type name such as 'NSDate' in CAST") }
        advance()
        try expectSymbol(")", "to close CAST")
        guard case .constant(let constant) = value else {
            throw error("CAST is supported on constants and arguments only", at: start)
        }
        let number: Double?
        switch constant {
        case .attribute(let attribute):
            switch ValueComparison.key(attribute) {
            case .number(let double, _): number = double
            case .text(let text): number = Double(text.trimmingCharacters(in: .whitespaces))
            case .bytes, .composite: number = nil
            }
        default: number = nil
        }
        switch type {
        case "NSDate":
            guard let number else { throw error("CAST to NSDate needs a number of seconds since 2001-01-01", at: start) }
            return .constant(.date(Date(timeIntervalSinceReferenceDate: number)))
        case "NSNumber":
            guard let number else { throw error("CAST to NSNumber needs a number or a numeric string", at: start) }
            if let whole = Int64(exactly: number) { return .constant(.integer(whole)) }
            return .constant(.double(number))
        case "NSString":
            guard case .attribute(let attribute) = constant else { throw error("CAST to NSString needs a value", at: start) }
            return .constant(.string(attribute.canonicalText))
        default:
            // Lade's own, so that every value prints as a format string that reads back.
            let types: [String: AttributeType] = ["NSDecimalNumber": .decimal, "NSData": .binary, "NSUUID": .uuid, "NSURL": .uri]
            guard let attributeType = types[type] else {
                throw error("CAST to '\(type)' is not supported; use NSDate, NSNumber, NSString, NSDecimalNumber, NSData, NSUUID or NSURL", at: start)
            }
            guard case .attribute(let attribute) = constant, let converted = try? AttributeValue(parsing: attribute.canonicalText, as: attributeType) else {
                throw error("CAST to \(type) needs a string that spells one", at: start)
            }
            return .constant(.attribute(converted))
        }
    }

    /// `{1, 2}` is a constant collection; `{price, 2}` keeps its expressions.
    private static func constantFolded(_ members: [FetchExpression]) -> FetchExpression {
        var values: [PredicateValue] = []
        for member in members {
            guard case .constant(let value) = member else { return .aggregate(members) }
            values.append(value)
        }
        return .constant(.collection(values))
    }

    // MARK: Arguments

    private mutating func argument(_ conversion: String, token: PredicateToken) throws(PredicateSyntaxError) -> FetchExpression {
        guard argumentIndex < arguments.count else {
            throw error("'%\(conversion)' needs argument \(argumentIndex + 1), but \(arguments.count) \(arguments.count == 1 ? "was" : "were") given", at: token)
        }
        let value = arguments[argumentIndex]
        argumentIndex += 1
        let ordinal = "argument \(argumentIndex)"
        switch conversion.last! {
        case "@":
            return .constant(value)
        case "K":
            guard case .attribute(.string(let path)) = value, !path.isEmpty else {
                throw error("'%K' needs a key path string, but \(ordinal) is \(value)", at: token)
            }
            let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard keys.allSatisfy({ !$0.isEmpty }) else { throw error("'%K': '\(path)' is not a key path", at: token) }
            // `items.@count`, `items.@sum.price` as in the format itself.
            var expression: FetchExpression = keys.first == "SELF" ? .evaluatedObject : .keyPath([keys[0]])
            for key in keys.dropFirst() {
                switch expression {
                case _ where key.hasPrefix("@"):
                    guard let op = CollectionOperator(rawValue: key.lowercased()), !(expression.isCollectionOperator) else {
                        throw error("'%K': '\(key)' in '\(path)' is not a collection operator that can stand there", at: token)
                    }
                    expression = .collectionOperator(op, expression, [])
                case .evaluatedObject: expression = .keyPath([key])
                case .keyPath(let keys): expression = .keyPath(keys + [key])
                case .collectionOperator(let op, let collection, let keys) where op != .count:
                    expression = .collectionOperator(op, collection, keys + [key])
                default:
                    throw error("'%K': nothing can follow @count in '\(path)'", at: token)
                }
            }
            return expression
        case "d", "i", "u", "D", "U", "c":
            switch value {
            case .attribute(.integer), .attribute(.bool): return .constant(value)
            case .attribute(.double(let number)) where Int64(exactly: number) != nil: return .constant(.integer(Int64(exactly: number)!))
            default: throw error("'%\(conversion)' needs an integer, but \(ordinal) is \(value)", at: token)
            }
        case "f", "g", "e", "F", "G", "E":
            guard case .attribute(let attribute) = value, case .number(let number, _) = ValueComparison.key(attribute) else {
                throw error("'%\(conversion)' needs a number, but \(ordinal) is \(value)", at: token)
            }
            return .constant(.double(number))
        case "s", "S":
            guard case .attribute(.string) = value else { throw error("'%\(conversion)' needs a string, but \(ordinal) is \(value)", at: token) }
            return .constant(value)
        default:
            throw error("'%\(conversion)' is not a supported format argument; use %@, %K, %d, %i, %ld, %f or %s", at: token)
        }
    }
}
