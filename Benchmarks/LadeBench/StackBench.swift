import Foundation
import Lade

/// `lade-bench stack`: inserts objects through a private-queue context in batches, saving and
/// resetting after each, and prints time and peak RSS as it goes (issue: flat memory).
enum StackBench {
    static func run(objects: Int, batch: Int, store: URL, model: URL) throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: store.path + suffix) }
        let loaded = try ManagedObjectModel(contentsOf: model)
        let coordinator = PersistentStoreCoordinator(managedObjectModel: loaded)
        try coordinator.addPersistentStore(type: .sqlite, at: store)
        let context = ManagedObjectContext(concurrencyType: .privateQueue)
        context.persistentStoreCoordinator = coordinator
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
