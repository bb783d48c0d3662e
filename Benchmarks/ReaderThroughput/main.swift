// Reader throughput on the `make bench` data set: times RecordReader over the CSV, NDJSON
// and JSON array files `lade-bench generate` writes (optionally gzipped copies of them),
// taking the median of several runs.
//
//   swift build -c release --product lade-bench --product reader-throughput
//   .build/release/lade-bench generate --rows 1000000 --out /tmp/lade-bench-data
//   .build/release/reader-throughput --data /tmp/lade-bench-data [--runs 3] [--gzip] [--only csv|ndjson|json]
//
// It prints wall and CPU seconds, and the CPU seconds spent inside nextBatch alone (without
// freeing the batches, which an import does on its own thread). On a busy machine the CPU
// times are the better measure of the reader.
import Foundation
import LadePipeline

struct Options {
    var runs = 3
    var gzip = false
    var only: String?
    var directory = ".build/bench/data-1000000"

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--runs": runs = Int(iterator.next() ?? "") ?? runs
            case "--gzip": gzip = true
            case "--only": only = iterator.next()
            case "--data": directory = iterator.next() ?? directory
            default:
                FileHandle.standardError.write(Data("usage: reader-throughput [--data DIR] [--runs N] [--gzip] [--only csv|ndjson|json]\n".utf8))
                exit(2)
            }
        }
    }
}

func sources(_ options: Options) throws -> [(label: String, path: String)] {
    var sources = [("CSV", "csv"), ("NDJSON", "ndjson"), ("JSON array", "json")].map { ($0.0, "\(options.directory)/products.\($0.1)") }
    for (_, path) in sources where !FileManager.default.fileExists(atPath: path) {
        FileHandle.standardError.write(Data("reader-throughput: no \(path); make it with lade-bench generate --out \(options.directory)\n".utf8))
        exit(1)
    }
    if let only = options.only {
        sources = sources.filter { $0.1.hasSuffix("." + only) }
    }
    if options.gzip {
        for (_, path) in sources where !FileManager.default.fileExists(atPath: path + ".gz") {
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
let files = try sources(options)
let fields: [FieldPath] = ["sku", "name", "price", "quantity", "active", "created_at", "category", "description"]
print("data: \(options.directory), fields: \(fields.count), batch: 5000, median of \(options.runs) runs")
func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

for (label, path) in files {
    var times: [Double] = []
    var cpuTimes: [Double] = []
    var readerTimes: [Double] = []
    var count = 0
    for _ in 0..<options.runs {
        let start = DispatchTime.now()
        let cpuStart = processCPUSeconds()
        let reader = try RecordReader(path: path, format: nil, fields: fields)
        count = 0
        var inReader = 0.0
        while true {
            let before = processCPUSeconds()
            guard let batch = try reader.nextBatch(maxRecords: 5_000) else { break }
            inReader += processCPUSeconds() - before
            for record in batch.records where record.problem != nil {
                fatalError("\(record.problem!)")
            }
            count += batch.records.count
        }
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        cpuTimes.append(processCPUSeconds() - cpuStart)
        readerTimes.append(inReader)
    }
    let median = times.sorted()[times.count / 2]
    let cpu = cpuTimes.sorted()[cpuTimes.count / 2]
    let inReader = readerTimes.sorted()[readerTimes.count / 2]
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    print("\(label.padding(toLength: 12, withPad: " ", startingAt: 0))"
          + String(format: " wall %6.3f s (%7.0f rows/s)  cpu %6.3f s (%7.0f rows/s)  in nextBatch %6.3f s (%7.0f rows/s, %5.1f MB/s)  %d MB",
                   median, Double(count) / median, cpu, Double(count) / cpu,
                   inReader, Double(count) / inReader, Double(size) / inReader / 1e6, size / 1_000_000))
}
