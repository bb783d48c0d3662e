import Foundation
import Testing
@testable import Lade

private func parse(_ format: String, _ arguments: PredicateValue...) throws -> FetchPredicate {
    try FetchPredicate(format: format, arguments: arguments)
}

private func parseError(_ format: String, _ arguments: PredicateValue...) -> String {
    do {
        _ = try FetchPredicate(format: format, arguments: arguments)
        return "parsed"
    } catch {
        return error.description
    }
}

private func key(_ path: String) -> FetchExpression { .keyPath(path) }
private func value(_ value: PredicateValue) -> FetchExpression { .constant(value) }

@Suite("Parsing Core Data's predicate format strings")
struct PredicateParserTests {
    @Test("literals: strings in either quotes with escapes, numbers in every base, booleans, nil, arrays, CAST dates")
    func literals() throws {
        #expect(try parse("a == 'it\\'s'") == .compare(key("a"), .equal, value("it's")))
        #expect(try parse("a == \"Zo\\u00eb\\n\"") == .compare(key("a"), .equal, value("Zoë\n")))
        #expect(try parse("a == 'a\\*b\\d'") == .compare(key("a"), .equal, value("a\\*b\\d")), "unknown escapes stay for LIKE and MATCHES")
        #expect(try parse("a == -12") == .compare(key("a"), .equal, value(-12)))
        #expect(try parse("a == 2.5e3") == .compare(key("a"), .equal, value(PredicateValue.double(2500))))
        #expect(try parse("a == 0x1F") == .compare(key("a"), .equal, value(31)))
        #expect(try parse("a == 0o17") == .compare(key("a"), .equal, value(15)))
        #expect(try parse("a == 0b101") == .compare(key("a"), .equal, value(5)))
        #expect(try parse("a == 99999999999999999999") == .compare(key("a"), .equal, value(PredicateValue.double(1e20))))
        for (word, flag) in [("TRUE", true), ("yes", true), ("False", false), ("NO", false)] {
            #expect(try parse("a == \(word)") == .compare(key("a"), .equal, value(PredicateValue.bool(flag))))
        }
        #expect(try parse("a == nil") == .compare(key("a"), .equal, value(PredicateValue.null)))
        #expect(try parse("a == NULL") == .compare(key("a"), .equal, value(PredicateValue.null)))
        #expect(try parse("a IN {1, 'b', nil}") == .compare(key("a"), .in, value([1, "b", nil])))
        #expect(try parse("a IN {}") == .compare(key("a"), .in, value([])))
        #expect(try parse("a BETWEEN {low, 3}") == .compare(key("a"), .between, .aggregate([key("low"), value(3)])))
        #expect(try parse("a > CAST(86400.5, 'NSDate')") == .compare(key("a"), .greaterThan, value(PredicateValue.date(Date(timeIntervalSinceReferenceDate: 86400.5)))))
        #expect(try parse("a == CAST('42', 'NSNumber')") == .compare(key("a"), .equal, value(42)))
    }

    @Test("NOT binds tighter than AND, AND tighter than OR; keywords and their symbols are case-insensitive synonyms")
    func precedence() throws {
        let (a, b, c) = (FetchPredicate.compare(key("a"), .equal, value(1)), FetchPredicate.compare(key("b"), .equal, value(2)), FetchPredicate.compare(key("c"), .equal, value(3)))
        #expect(try parse("a == 1 OR b == 2 AND c == 3") == .or([a, .and([b, c])]))
        #expect(try parse("a == 1 || b == 2 && c == 3") == .or([a, .and([b, c])]))
        #expect(try parse("(a == 1 or b == 2) and c == 3") == .and([.or([a, b]), c]))
        #expect(try parse("NOT a == 1 AND b == 2") == .and([.not(a), b]))
        #expect(try parse("!a == 1 && !(b == 2 || c == 3)") == .and([.not(a), .not(.or([b, c]))]))
        #expect(try parse("a == 1 AND b == 2 AND c == 3") == .and([a, b, c]))
        #expect(try parse("TRUEPREDICATE") == .true)
        #expect(try parse("falsepredicate OR a == 1") == .or([.false, a]))
        #expect(try parse("((a == 1))") == a)
        #expect(try parse("(a) == 1") == a, "parentheses around an expression")
    }

    @Test("every comparison operator spelling, with [c], [d] and [cd]")
    func operators() throws {
        let spellings: [(String, ComparisonOperator)] = [
            ("==", .equal), ("=", .equal), ("!=", .notEqual), ("<>", .notEqual), ("<", .lessThan), ("<=", .lessThanOrEqual),
            ("=<", .lessThanOrEqual), (">", .greaterThan), (">=", .greaterThanOrEqual), ("=>", .greaterThanOrEqual),
            ("IN", .in), ("contains", .contains), ("BeginsWith", .beginsWith), ("ENDSWITH", .endsWith), ("like", .like),
            ("MATCHES", .matches), ("between", .between),
        ]
        for (spelling, op) in spellings {
            #expect(try parse("a \(spelling) b") == .compare(key("a"), op, key("b")), "\(spelling)")
        }
        #expect(try parse("a ==[c] 'x'") == .compare(key("a"), .equal, value("x"), options: .caseInsensitive))
        #expect(try parse("a LIKE[d] 'x'") == .compare(key("a"), .like, value("x"), options: .diacriticInsensitive))
        #expect(try parse("a BEGINSWITH[cd] 'x'") == .compare(key("a"), .beginsWith, value("x"), options: [.caseInsensitive, .diacriticInsensitive]))
        #expect(try parse("a CONTAINS[CD] 'x'") == .compare(key("a"), .contains, value("x"), options: [.caseInsensitive, .diacriticInsensitive]))
    }

    @Test("arguments: %@ any value, %K a key path, %d %i %ld integers, %f numbers, %s strings")
    func arguments() throws {
        #expect(try parse("price < %@ AND name BEGINSWITH[cd] %@", 10, "bo")
            == .and([.compare(key("price"), .lessThan, value(10)), .compare(key("name"), .beginsWith, value("bo"), options: [.caseInsensitive, .diacriticInsensitive])]))
        #expect(try parse("%K == %d", "category.name", 3) == .compare(key("category.name"), .equal, value(3)))
        #expect(try parse("%K == %i OR %K == %ld", "a", 1, "b", 2) == .or([.compare(key("a"), .equal, value(1)), .compare(key("b"), .equal, value(2))]))
        #expect(try parse("a < %f", 2) == .compare(key("a"), .lessThan, value(PredicateValue.double(2))))
        #expect(try parse("%K > 2", "items.@sum.price") == .compare(.collectionOperator(.sum, key("items"), ["price"]), .greaterThan, value(2)))
        #expect(try parse("%K == 0", "SELF.items.@count") == .compare(.collectionOperator(.count, key("items"), []), .equal, value(0)))
        #expect(parseError("%K == 0", "items.@count.x") == "'%K': nothing can follow @count in 'items.@count.x' at column 1")
        #expect(try parse("a == %s", "x") == .compare(key("a"), .equal, value("x")))
        #expect(try parse("a IN %@", [1, 2]) == .compare(key("a"), .in, value([1, 2])))
        #expect(try parse("'%@' == a", 5) == .compare(value("%@"), .equal, key("a")), "quoted, a format specifier is text")
        #expect(parseError("a == %@ AND b == %@", 1) == "'%@' needs argument 2, but 1 was given at column 18")
        #expect(parseError("%K == 1", 5) == "'%K' needs a key path string, but argument 1 is attribute(Lade.AttributeValue.integer(5)) at column 1")
        #expect(parseError("a == %d", "x").hasPrefix("'%d' needs an integer"))
        #expect(parseError("a == %x", 1).hasPrefix("'%x' is not a supported format argument"))
    }

    @Test("$VARIABLES are substituted later; a SUBQUERY's own variable is left alone")
    func variables() throws {
        let template = try parse("stock < $THRESHOLD AND SUBQUERY(items, $x, $x.price > $LIMIT).@count > 0")
        #expect(template.variableNames == ["THRESHOLD", "LIMIT"])
        let filled = try template.substituting(["THRESHOLD": 5, "LIMIT": 2.5])
        #expect(filled == .and([
            .compare(key("stock"), .lessThan, value(5)),
            .compare(.collectionOperator(.count, .subquery(key("items"), variable: "x", .compare(.variableKeyPath("x", ["price"]), .greaterThan, value(2.5))), []), .greaterThan, value(0)),
        ]))
        #expect(throws: FetchPredicateError.missingVariable("LIMIT")) { try template.substituting(["THRESHOLD": 5]) }
    }

    @Test("ANY and SOME, ALL, NONE as NOT ANY; key paths through to-one and to-many relationships")
    func modifiers() throws {
        #expect(try parse("ANY tags.name == 'x'") == .compare(key("tags.name"), .equal, value("x"), modifier: .any))
        #expect(try parse("some tags.name == 'x'") == .compare(key("tags.name"), .equal, value("x"), modifier: .any))
        #expect(try parse("ALL tags.weight > 1") == .compare(key("tags.weight"), .greaterThan, value(1), modifier: .all))
        #expect(try parse("NONE tags.name BEGINSWITH 'a'") == .not(.compare(key("tags.name"), .beginsWith, value("a"), modifier: .any)))
        #expect(try parse("owner.manager.name == 'x'") == .compare(.keyPath(["owner", "manager", "name"]), .equal, value("x")))
        #expect(try parse("SELF == %@", .object(ManagedObjectID(temporaryFor: "Item"))).description.isEmpty == false)
        #expect(try parse("SELF.name == 'x'") == .compare(key("name"), .equal, value("x")))
        #expect(try parse("#IN == 1 AND #self.#Like == 2") == .and([.compare(key("IN"), .equal, value(1)), .compare(key("self.Like"), .equal, value(2))]))
    }

    @Test("collection operators @count @sum @avg @min @max, and SUBQUERY")
    func collectionOperators() throws {
        #expect(try parse("items.@count > 2") == .compare(.collectionOperator(.count, key("items"), []), .greaterThan, value(2)))
        #expect(try parse("owner.items.@sum.price < 10") == .compare(.collectionOperator(.sum, key("owner.items"), ["price"]), .lessThan, value(10)))
        #expect(try parse("items.@AVG.price == 1") == .compare(.collectionOperator(.avg, key("items"), ["price"]), .equal, value(1)))
        #expect(try parse("items.@min.date < %@ OR items.@max.owner.score > 1", .date(Date(timeIntervalSinceReferenceDate: 0)))
            == .or([.compare(.collectionOperator(.min, key("items"), ["date"]), .lessThan, value(PredicateValue.date(Date(timeIntervalSinceReferenceDate: 0)))),
                    .compare(.collectionOperator(.max, key("items"), ["owner", "score"]), .greaterThan, value(1))]))
        #expect(try parse("{1, 2, 3}.@sum == 6") == .compare(.collectionOperator(.sum, value([1, 2, 3]), []), .equal, value(6)))
        #expect(try parse("SUBQUERY(items, $i, $i.tags.@count > 1 AND ANY $i.tags.name == 'a').@count == 0")
            == .compare(.collectionOperator(.count, .subquery(key("items"), variable: "i", .and([
                .compare(.collectionOperator(.count, .variableKeyPath("i", ["tags"]), []), .greaterThan, value(1)),
                .compare(.variableKeyPath("i", ["tags", "name"]), .equal, value("a"), modifier: .any),
            ])), []), .equal, value(0)))
        #expect(parseError("items.@count.name > 1") == "nothing can follow @count at column 14")
        #expect(parseError("items.@median.price > 1") == "unknown collection operator '@median'; expected @count, @sum, @avg, @min or @max at column 7")
    }

    @Test("errors name the column and what was expected")
    func errors() {
        #expect(parseError("name == 'a' AND price ==") == "expected a value after '==' at column 25")
        #expect(parseError("price > 3 AND name == ") == "expected a value after '==' at column 23")
        #expect(parseError("name == 'Zoë' AND == 3") == "expected a value or key path, found '==' at column 19")
        #expect(parseError("name 'a'") == "expected a comparison operator (==, <, IN, BEGINSWITH…) after the value, found ''a'' at column 6")
        #expect(parseError("(a == 1") == "expected ')' to close the '(' at column 1, found the end at column 8")
        #expect(parseError("a == 'open") == "expected ' to close the string that starts at column 6")
        #expect(parseError("a == 1 b") == "expected AND, OR or the end after the predicate, found 'b' at column 8")
        #expect(parseError("") == "expected a predicate; the format is empty at column 1")
        #expect(parseError("a ==[x] 1") == "unknown comparison option 'x'; expected c, d or cd at column 6")
        #expect(parseError("a == ^") == "unexpected character '^' at column 6")
        #expect(parseError("IN == 1") == "expected a value or key path, found the keyword IN (write #IN for a key of that name) at column 1")
        #expect(parseError("a == SUBQUERY(items, x, TRUEPREDICATE)") == "expected a $variable as SUBQUERY's second argument at column 22")
    }

    @Test("what the language has and Lade does not is refused by name: arithmetic, functions, index expressions")
    func unsupported() {
        #expect(parseError("price * 2 > 10") == "arithmetic ('*') is not supported in predicates at column 7")
        #expect(parseError("a == b + 1") == "arithmetic ('+') is not supported in predicates at column 8")
        #expect(parseError("FUNCTION(a, 'x') == 1") == "FUNCTION is not supported in predicates at column 1")
        #expect(parseError("lowercase(a) == 'x'") == "functions such as lowercase() are not supported in predicates at column 1")
        #expect(parseError("items[0].name == 'x'") == "index expressions ([0], [FIRST]…) are not supported in predicates at column 6")
        #expect(parseError("a == CAST(b, 'NSDate')") == "CAST is supported on constants and arguments only at column 6")
    }
}
