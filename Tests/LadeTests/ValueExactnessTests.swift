import Foundation
import Testing
@testable import Lade

/// A value a store cannot keep exactly is refused, never rounded to another number, to
/// infinity or to zero in silence.
@Suite("Values kept exactly or refused")
struct ValueExactnessTests {
    @Test("floating-point text beyond the type's range, or so small it would be zero, is refused", arguments: [
        ("1e309", AttributeType.double, "out of range"), ("-1e400", .double, "out of range"), ("inf", .double, "out of range"),
        ("1e-400", .double, "too small"), ("3.5e38", .float, "out of range"), ("1e-50", .float, "too small"),
        ("0x1p-2000", .double, "too small"),
    ])
    func floatingRange(_ text: String, _ type: AttributeType, _ reason: String) {
        #expect {
            try AttributeValue(parsing: text, as: type)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test("ordinary rounding of decimal text to binary is kept, and zero is zero", arguments: [
        ("0.1", AttributeType.double), ("1.7976931348623157e308", .double), ("4.9e-324", .double), ("0.000", .double), ("-0e5", .double),
        ("3.4028235e38", .float), ("1.4e-45", .float), ("0", .float),
    ])
    func floatingAccepted(_ text: String, _ type: AttributeType) throws {
        _ = try AttributeValue(parsing: text, as: type)
    }

    @Test("a Decimal of more than 38 significant digits is refused; 38 are kept exactly")
    func decimalDigits() throws {
        let thirtyEight = "12345678901234567890123456789012345678"
        #expect(try AttributeValue(parsing: thirtyEight, as: .decimal) == .decimal(Decimal(string: thirtyEight)!))
        #expect(DecimalText.format(try #require(DecimalText.parse(thirtyEight))) == thirtyEight)
        #expect {
            try AttributeValue(parsing: "1234567890123456789012345678901234567891", as: .decimal)
        } throws: { error in
            "\(error)".contains("40 significant digits")
        }
        #expect(DecimalText.parse("1234567890123456789012345678901234567891") == nil)
        #expect(DecimalText.significantDigits("-001.2300e5") == 3)
    }

    @Test("a SQLite store refuses a Decimal it would round (more than 15 significant digits and no double reading back as it), naming object and attribute")
    func sqliteDecimal() throws {
        let stack = try TestStack()
        let context = stack.context()
        try context.performAndWait {
            try TestStack.product("AB-1", in: context, price: Decimal(string: "900719925474099.3")!)
            #expect {
                try context.save()
            } throws: { error in
                guard let validation = error as? ObjectValidationError else { return false }
                return validation.failures.count == 1 && validation.failures[0].property == "price"
                    && validation.failures[0].rule == .precision && "\(validation)".contains("16 significant digits")
            }
        }
        #expect(try stack.sql("SELECT COUNT(*) FROM ZPRODUCT") == [[.integer(0)]])
        let fifteen = stack.context()
        try fifteen.performAndWait {
            try TestStack.product("AB-2", in: fifteen, price: Decimal(string: "12345678901234.5")!)
            try fifteen.save()
        }
        #expect(try stack.sql("SELECT CAST(ZPRICE AS TEXT) FROM ZPRODUCT") == [[.text("12345678901234.5")]])
    }

    @Test("a SQLite store keeps a Decimal of more than 15 significant digits that a double reads back as (as Apple's stores hold them): stored as that double, read back exactly")
    func sqliteDecimalOfADouble() throws {
        let stack = try TestStack()
        // 17 and 16 digits: the shortest text of a double each, so the double reads back as them.
        let prices = ["3.3333333332999993", "900719925474099.2", "12345678901234568"]
        let context = stack.context()
        try context.performAndWait {
            for (offset, price) in prices.enumerated() {
                try TestStack.product("AB-\(offset)", in: context, price: Decimal(string: price)!)
            }
            try context.save()
        }
        #expect(try stack.sql("SELECT typeof(ZPRICE) FROM ZPRODUCT ORDER BY ZSKU") == [[.text("real")], [.text("real")], [.text("integer")]])
        let read = ManagedObjectContext(concurrencyType: .privateQueue)
        read.persistentStoreCoordinator = try stack.otherCoordinator()
        try read.performAndWait {
            let products = try read.fetch(FetchRequest(entityName: "Product", sortDescriptors: [FetchSortDescriptor("sku")]))
            #expect(products.map { $0.attributeValue(forKey: "price") } == prices.map { .decimal(Decimal(string: $0)!) })
        }
        #expect(DecimalText.doubleReadingBack(as: Decimal(string: "900719925474099.3")!) == nil)
        #expect(DecimalText.doubleReadingBack(as: Decimal(string: "9007199254740993")!) == nil)
        #expect(DecimalText.doubleReadingBack(as: Decimal(string: "0.30000000000000001")!) == nil)
        #expect(DecimalText.doubleReadingBack(as: Decimal(string: "0.1")!) == 0.1)
    }
}
