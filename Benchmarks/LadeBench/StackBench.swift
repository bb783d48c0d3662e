import Foundation
import Lade

/// `lade-bench stack`: inserts objects through a private-queue context in batches, saving and
/// resetting after each, and prints time and peak RSS as it goes (issue: flat memory).
enum StackBench {
    /// A private-queue context on a new, empty SQLite store at `store` (an old one is removed).
    static func freshContext(store: URL, model: URL) throws -> ManagedObjectContext {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        let coordinator = PersistentStoreCoordinator(managedObjectModel: try ManagedObjectModel(contentsOf: model))
        try coordinator.addPersistentStore(type: .sqlite, at: store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    static func phases(objects: Int, store: URL, model: URL) throws {
        let context = try freshContext(store: store, model: model)
        func cpu() -> Double { var u = rusage(); getrusage(RUSAGE_SELF.rawValue, &u); return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 }
        try context.performAndWait {
            var t = cpu()
            var products: [ManagedObject] = []
            for _ in 0..<objects { products.append(try context.insertObject(forEntityName: "Product")) }
            print(String(format: "insertObject      %6.2f µs", (cpu() - t) / Double(objects) * 1e6)); t = cpu()
            for (i, p) in products.enumerated() {
                try p.setAttributeValue(.string("SKU-\(1_000_000_000 + i)"), forKey: "sku")
                try p.setAttributeValue(.string("Product number"), forKey: "name")
                try p.setAttributeValue(.decimal(Decimal(sign: .plus, exponent: -2, significand: Decimal(i % 10_000))), forKey: "price")
                try p.setAttributeValue(.integer(Int64(i % 500)), forKey: "stock")
                try p.setAttributeValue(.date(Date(timeIntervalSinceReferenceDate: Double(i))), forKey: "createdAt")
            }
            print(String(format: "5 × setAttribute  %6.2f µs", (cpu() - t) / Double(objects) * 1e6)); t = cpu()
            let category = try context.insertObject(forEntityName: "Category")
            try category.setValue("Bench", forKey: "name")
            for p in products { try p.setObject(category, forKey: "category") }
            print(String(format: "setObject         %6.2f µs", (cpu() - t) / Double(objects) * 1e6)); t = cpu()
            try context.save()
            print(String(format: "save              %6.2f µs", (cpu() - t) / Double(objects) * 1e6)); t = cpu()
            products = []
            context.reset()
            print(String(format: "reset             %6.2f µs", (cpu() - t) / Double(objects) * 1e6)); t = cpu()
        }
    }

    static func run(objects: Int, batch: Int, store: URL, model: URL) throws {
        let context = try freshContext(store: store, model: model)
        let start = Date()
        var reportAt = Set([100_000, 250_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000, objects])
        try context.performAndWait {
            var category: ManagedObject?
            var inserted = 0
            while inserted < objects {
                if category == nil {
                    category = try context.insertObject(forEntityName: "Category")
                    try category!.setValue("Bench \(inserted)", forKey: "name")
                }
                for _ in 0..<min(batch, objects - inserted) {
                    let product = try context.insertObject(forEntityName: "Product")
                    try product.setAttributeValue(.string("SKU-\(1_000_000_000 + inserted)"), forKey: "sku")
                    try product.setAttributeValue(.string("Product number \(inserted)"), forKey: "name")
                    try product.setAttributeValue(.decimal(Decimal(sign: .plus, exponent: -2, significand: Decimal(inserted % 10_000))), forKey: "price")
                    try product.setAttributeValue(.integer(Int64(inserted % 500)), forKey: "stock")
                    try product.setAttributeValue(.date(Date(timeIntervalSinceReferenceDate: Double(inserted))), forKey: "createdAt")
                    try product.setObject(category, forKey: "category")
                    inserted += 1
                }
                try context.save()
                context.reset()
                category = nil
                if reportAt.contains(inserted) {
                    reportAt.remove(inserted)
                    let seconds = Date().timeIntervalSince(start)
                    print(String(format: "%9d objects  %7.2f s  %8.0f objects/s  peak RSS %6.1f MiB", inserted, seconds, Double(inserted) / seconds, peakMiB()))
                }
            }
        }
    }

    static func peakMiB() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}
