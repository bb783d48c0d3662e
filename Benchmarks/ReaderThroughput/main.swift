// Reader throughput on the `make bench` row shape: generates deterministic CSV, NDJSON and
// JSON array files (optionally gzipped), then times RecordReader over each, taking the median
// of several runs.
//
//   swift build -c release --product reader-throughput
//   .build/release/reader-throughput [--rows 1000000] [--runs 3] [--gzip] [--only csv|ndjson|json] [--dir /tmp/lade-reader-bench]
//
// It prints wall and CPU seconds: on a busy machine the CPU time is the better measure of the reader.
import Foundation
import LadePipeline

struct Options {
    var rows = 1_000_000
    var runs = 3
    var gzip = false
    var only: String?
    var directory = NSTemporaryDirectory() + "lade-reader-bench"

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--rows": rows = Int(iterator.next() ?? "") ?? rows
            case "--runs": runs = Int(iterator.next() ?? "") ?? runs
            case "--gzip": gzip = true
            case "--only": only = iterator.next()
            case "--dir": directory = iterator.next() ?? directory
            default:
                FileHandle.standardError.write(Data("usage: reader-throughput [--rows N] [--runs N] [--gzip] [--only csv|ndjson|json] [--dir PATH]\n".utf8))
                exit(2)
            }
        }
    }
}

/// SplitMix64: a fixed seed gives the same data set on every machine.
struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

struct Row {
    var sku, name, price, quantity, active, createdAt, category, description: String
}

let adjectives = ["Classic", "Deluxe", "Compact", "Große", "Mini", "Ergonomic", "Café", "Smart", "Rustic", "Ultra"]
let nouns = ["Widget", "Lamp", "Chair", "Kettle", "Notebook", "Backpack", "Tasse", "Bureau", "Skillet", "Speaker"]
let words = ["lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit", "sed", "do", "eiusmod",
             "tempor", "incididunt", "ut", "labore", "et", "dolore", "magna", "aliqua", "naïve", "crème", "brûlée"]
let categories = (0..<50).map { "Category \($0)" }

func makeRow(_ index: Int, _ random: inout Generator) -> Row {
    var mixer = Generator(state: UInt64(index))
    let sku = "SKU-" + String(mixer.next(), radix: 16)
    var name = "\(adjectives[random.below(adjectives.count)]) \(nouns[random.below(nouns.count)])"
    switch random.below(4) {
    case 0: name += ", size \(random.below(10))"
    case 1: name = "The \"\(name)\""
    default: break
    }
    let price = "\(random.below(1000)).\(String(format: "%02d", random.below(100)))"
    let quantity = String(random.below(10_000))
    let active = random.below(2) == 0 ? "true" : "false"
    let createdAt = String(format: "20%02d-%02d-%02dT%02d:%02d:%02dZ", 10 + random.below(15), 1 + random.below(12),
                           1 + random.below(28), random.below(24), random.below(60), random.below(60))
    let category = categories[random.below(categories.count)]
    var description = ""
    let length = random.below(201)
    while description.utf8.count < length {
        if !description.isEmpty { description += " " }
        description += words[random.below(words.count)]
    }
    if description.utf8.count > length {
        description = String(decoding: Array(description.utf8.prefix(length)), as: UTF8.self)
    }
    return Row(sku: sku, name: name, price: price, quantity: quantity, active: active, createdAt: createdAt,
               category: category, description: description)
}

func csvField(_ text: String) -> String {
    text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
        ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
}

func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\u{0}"..."\u{1F}": out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func jsonObject(_ row: Row) -> String {
    "{\"sku\":\(jsonString(row.sku)),\"name\":\(jsonString(row.name)),\"price\":\(row.price),\"quantity\":\(row.quantity),"
        + "\"active\":\(row.active),\"created_at\":\(jsonString(row.createdAt)),\"category\":\(jsonString(row.category)),"
        + "\"description\":\(jsonString(row.description))}"
}

func generate(_ options: Options) throws -> [(label: String, path: String)] {
    try FileManager.default.createDirectory(atPath: options.directory, withIntermediateDirectories: true)
    let base = "\(options.directory)/products-\(options.rows)"
    let paths = (csv: base + ".csv", ndjson: base + ".ndjson", json: base + ".json")
    if !FileManager.default.fileExists(atPath: paths.json) {
        for path in [paths.csv, paths.ndjson, paths.json + ".partial"] {
            guard FileManager.default.createFile(atPath: path, contents: nil) else { fatalError("cannot create \(path)") }
        }
        let csv = try FileHandle(forWritingTo: URL(fileURLWithPath: paths.csv))
        let ndjson = try FileHandle(forWritingTo: URL(fileURLWithPath: paths.ndjson))
        let json = try FileHandle(forWritingTo: URL(fileURLWithPath: paths.json + ".partial"))
        var random = Generator(state: 20_240_501)
        var csvText = "sku,name,price,quantity,active,created_at,category,description\n"
        var ndjsonText = ""
        var jsonText = "[\n"
        for index in 0..<options.rows {
            let row = makeRow(index, &random)
            csvText += [row.sku, row.name, row.price, row.quantity, row.active, row.createdAt, row.category, row.description]
                .map(csvField).joined(separator: ",") + "\n"
            let object = jsonObject(row)
            ndjsonText += object + "\n"
            jsonText += (index + 1 < options.rows ? object + ",\n" : object + "\n")
            if csvText.utf8.count > 1 << 20 || index + 1 == options.rows {
                csv.write(Data(csvText.utf8)); csvText = ""
                ndjson.write(Data(ndjsonText.utf8)); ndjsonText = ""
                if index + 1 == options.rows { jsonText += "]\n" }
                json.write(Data(jsonText.utf8)); jsonText = ""
            }
        }
        try csv.close(); try ndjson.close(); try json.close()
        try FileManager.default.moveItem(atPath: paths.json + ".partial", toPath: paths.json)
    }
    var sources = [("CSV", paths.csv), ("NDJSON", paths.ndjson), ("JSON array", paths.json)]
    if let only = options.only {
        sources = sources.filter { $0.1.hasSuffix("." + only) }
    }
    if options.gzip {
        for (label, path) in sources where !FileManager.default.fileExists(atPath: path + ".gz") {
            _ = label
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "gzip -c '\(path)' > '\(path).gz'"]
            try process.run()
            process.waitUntilExit()
        }
        sources += sources.map { ($0.0 + " .gz", $0.1 + ".gz") }
    }
    return sources
}

let options = Options(CommandLine.arguments)
let sources = try generate(options)
let fields: [FieldPath] = ["sku", "name", "price", "quantity", "active", "created_at", "category", "description"]
print("rows: \(options.rows), fields: \(fields.count), batch: 5000, median of \(options.runs) runs")
func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

for (label, path) in sources {
    var times: [Double] = []
    var cpuTimes: [Double] = []
    var count = 0
    for _ in 0..<options.runs {
        let start = DispatchTime.now()
        let cpuStart = processCPUSeconds()
        let reader = try RecordReader(path: path, format: nil, fields: fields)
        count = 0
        while let batch = try reader.nextBatch(maxRecords: 5_000) {
            for record in batch.records where record.problem != nil {
                fatalError("\(record.problem!)")
            }
            count += batch.records.count
        }
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        cpuTimes.append(processCPUSeconds() - cpuStart)
    }
    precondition(count == options.rows, "\(label): read \(count) records, expected \(options.rows)")
    let median = times.sorted()[times.count / 2]
    let cpu = cpuTimes.sorted()[cpuTimes.count / 2]
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    print("\(label.padding(toLength: 12, withPad: " ", startingAt: 0))"
          + String(format: " wall %6.3f s (%9.0f rows/s)   cpu %6.3f s (%9.0f rows/s, %6.1f MB/s)   %d MB",
                   median, Double(options.rows) / median, cpu, Double(options.rows) / cpu, Double(size) / cpu / 1e6, size / 1_000_000))
}
