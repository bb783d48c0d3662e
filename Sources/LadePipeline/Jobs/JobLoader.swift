import Foundation
import Lade

extension Job {
    /// Reads a job file (YAML or JSON). Shape errors name the file, line, column and field;
    /// whether the job fits its model and source is checked later (`JobPlan`).
    public init(contentsOf url: URL, displayPath: String? = nil) throws {
        let file = displayPath ?? url.path
        let text: String
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw JobError(file: file, "is a directory, not a job file; give the job's .yaml or .json file")
        }
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw JobError(file: file, FileManager.default.fileExists(atPath: url.path)
                ? "cannot be read as UTF-8 text" : "no such job file")
        }
        try self.init(parsing: text, file: file, directory: url.deletingLastPathComponent())
    }

    /// Reads a job from text; relative paths in it are taken from `directory`.
    public init(parsing text: String, file: String, directory: URL) throws {
        let root = try JobNode.parse(text, file: file)
        let resolver = JobPathResolver(directory: directory)
        let common = ["kind", "model", "store", "batch", "onError", "migrate", "transactionAuthor"]
        let kindNode = try root.fields(allowed: common + Self.importFields + ["checkpoints", "writer", "flag", "steps"])["kind"]
        guard let kindNode else {
            throw root.error("the job has no 'kind'; write 'kind: import' (lade run) or 'kind: seed' (lade seed)")
        }
        guard let kind = Kind(rawValue: try kindNode.string()) else {
            throw kindNode.error("expected import or seed, found '\(try kindNode.string())'")
        }
        let fields = try root.fields(allowed: common + ["writer"] + (kind == .import ? Self.importFields + ["checkpoints"] : ["flag", "steps"]))
        func required(_ name: String) throws -> JobNode {
            guard let node = fields[name] else { throw root.error("the job has no '\(name)'; see jobs/README.md") }
            return node
        }

        self.kind = kind
        self.file = file
        store = try Self.store(try required("store"), resolver)
        // No model: the store's own (its Z_MODELCACHE), for a job into a store that exists.
        model = try fields["model"].map { try Self.model($0, resolver) } ?? .carried(byStoreAt: store.url)
        transactionAuthor = try fields["transactionAuthor"]?.nonEmptyString()
        batch = try fields["batch"].map(Self.batch) ?? .default
        onError = try fields["onError"].map { try Self.errorPolicy($0, resolver) } ?? .abort
        writer = try fields["writer"].map { ImportWriterChoice(rawValue: try $0.oneOf(ImportWriterChoice.allCases.map(\.rawValue)))! } ?? .auto
        if let node = fields["migrate"] {
            migrate = JobMigration(rawValue: try node.oneOf(JobMigration.allCases.map(\.rawValue)))!
            if migrate == .automatic && model.isCarriedByStore {
                throw node.error("'migrate: automatic' needs the model's versions: name the .xcdatamodeld bundle as the job's 'model'")
            }
            if migrate == .automatic && model.url.pathExtension != "xcdatamodeld" {
                throw node.error("'migrate: automatic' needs the model's versions: give the .xcdatamodeld bundle as the model, not \(model.url.lastPathComponent)")
            }
        }
        switch kind {
        case .import:
            flag = nil
            checkpoints = try fields["checkpoints"].map(Self.checkpoints) ?? .default
            steps = [try Self.step(fields, root: root, resolver: resolver)]
        case .seed:
            if onError.policy == .skip, let node = fields["onError"] {
                throw node.error("a seed is all or nothing (any rejected row stops it and nothing is written), so it takes no 'policy: skip'")
            }
            let flagNode = try required("flag")
            flag = try flagNode.nonEmptyString()
            let items = try required("steps").items()
            guard !items.isEmpty else { throw try required("steps").error("a seed needs at least one step") }
            steps = try items.map { item in
                try Self.step(try item.fields(allowed: Self.importFields), root: item, resolver: resolver)
            }
        }
        if onError.policy == .skip && onError.rejects == nil {
            // Rejects go beside the store unless the job says where; for a store on a server,
            // beside the job file, named after it.
            let beside = store.location.isServer ? directory.appendingPathComponent(URL(fileURLWithPath: file).lastPathComponent) : store.url
            onError.rejects = beside.deletingLastPathComponent()
                .appendingPathComponent(beside.deletingPathExtension().lastPathComponent + ".rejects.ndjson").standardizedFileURL
        }
    }

    static let importFields = ["source", "entity", "key", "mode", "fields", "autoMatch", "relationships"]

    private static func model(_ node: JobNode, _ resolver: JobPathResolver) throws -> ModelReference {
        if !node.isMapping { return ModelReference(url: resolver.url(try node.nonEmptyString())) }
        let fields = try node.fields(allowed: ["path", "version", "momd"])
        guard let path = fields["path"] else { throw node.error("the model needs a 'path'") }
        return ModelReference(
            url: resolver.url(try path.nonEmptyString()),
            version: try fields["version"]?.nonEmptyString(),
            compiledModel: try fields["momd"].map { resolver.url(try $0.nonEmptyString()) })
    }

    /// `store:`: a file (`path:`, its type named or told from its extension) or a PostgreSQL
    /// store (`url:`, its type postgresql named or told from the URL).
    private static func store(_ node: JobNode, _ resolver: JobPathResolver) throws -> StoreReference {
        let fields = try node.fields(allowed: ["type", "path", "url", "history"])
        let named = try fields["type"].map { StoreReference.Kind(name: try $0.oneOf(StoreReference.Kind.namedTypes.map(\.name)))! }
        if let urlNode = fields["url"] {
            if let pathNode = fields["path"] { throw pathNode.error("give the store's 'url' (a PostgreSQL store) or its 'path' (a file), not both") }
            let text = try urlNode.nonEmptyString()
            guard StoreLocation.isServerURL(text) else {
                throw urlNode.error("expected a PostgreSQL URL, postgresql://USER@HOST:PORT/DATABASE?schema=NAME; a store file is named by 'path'")
            }
            if let named, named != .postgresql {
                throw fields["type"]!.error("a 'url' names a postgresql store, not a \(named.name) one: give 'type: postgresql' (or no type) with a url, or a 'path' for a \(named.name) file")
            }
            let location: StoreLocation
            do {
                location = try StoreLocation(text)
            } catch let error as StoreError {
                throw urlNode.error("the URL \(error.path) \(error.message)")
            }
            var reference = StoreReference(kind: .postgresql, url: location.url)
            if let historyNode = fields["history"] { reference.history = try historyNode.bool() }
            return reference
        }
        guard let pathNode = fields["path"] else {
            throw node.error(named == .postgresql ? "a postgresql store needs its 'url': postgresql://USER@HOST:PORT/DATABASE?schema=NAME" : "the store needs a 'path'")
        }
        let pathText = try pathNode.nonEmptyString()
        if StoreLocation.isServerURL(pathText) {
            throw pathNode.error("a postgresql:// URL goes in 'url', not 'path': store: { type: postgresql, url: \"…\" }")
        }
        if StoreLocation.isConnectionString(pathText) {
            throw pathNode.error("the path \(PostgreSQLLocation.redact(pathText)) \(StoreLocation.connectionStringRefusal)")
        }
        if named == .postgresql {
            throw pathNode.error("a postgresql store is named by its 'url' (postgresql://USER@HOST:PORT/DATABASE?schema=NAME), not a 'path'")
        }
        let url = resolver.url(pathText)
        let kind: StoreReference.Kind
        if let named {
            kind = named
        } else {
            guard let implied = StoreReference.Kind(fileExtensionOf: url) else {
                throw node.error("say the store's type (type: \(StoreReference.Kind.fileTypeNames)); it cannot be told from '\(url.lastPathComponent)'")
            }
            kind = implied
        }
        var reference = StoreReference(kind: kind, url: url)
        if let historyNode = fields["history"] {
            reference.history = try historyNode.bool()
            if reference.history && kind != .sqlite {
                throw historyNode.error("persistent history is kept by SQLite and PostgreSQL stores only (as in Core Data, which keeps it in SQLite stores), not \(kind.rawValue) stores; leave 'history' out or use a SQLite or PostgreSQL store")
            }
        }
        return reference
    }

    private static func batch(_ node: JobNode) throws -> BatchSettings {
        let fields = try node.fields(allowed: ["size", "resetEvery", "commitEvery", "commitSeconds", "cacheMiB"])
        var batch = BatchSettings.default
        if let size = fields["size"] { batch.size = try size.positiveInt() }
        if let reset = fields["resetEvery"] { batch.resetEvery = try reset.positiveInt() }
        if let every = fields["commitEvery"] { batch.commitEvery = try every.positiveInt() }
        if let seconds = fields["commitSeconds"] { batch.commitSeconds = try seconds.positiveNumber() }
        if let cache = fields["cacheMiB"] {
            let mebibytes = try cache.positiveInt()
            guard mebibytes <= BatchSettings.largestCacheMiB else {
                throw cache.error("cacheMiB \(mebibytes) is more than \(BatchSettings.largestCacheMiB) (16 GiB); it is SQLite's page cache in MiB, which the run's memory grows by")
            }
            batch.cacheMiB = mebibytes
        }
        return batch
    }

    private static func checkpoints(_ node: JobNode) throws -> CheckpointRetention {
        let fields = try node.fields(allowed: ["keep", "maxAgeDays"])
        var retention = CheckpointRetention.default
        if let keep = fields["keep"] { retention.keep = try keep.positiveInt() }
        if let days = fields["maxAgeDays"] { retention.maxAge = TimeInterval(try days.positiveInt()) * 86_400 }
        return retention
    }

    private static func errorPolicy(_ node: JobNode, _ resolver: JobPathResolver) throws -> ErrorPolicy {
        let fields = try node.fields(allowed: ["policy", "maxErrors", "rejects"])
        let policy = ErrorPolicy.Policy(rawValue: try fields["policy"]?.oneOf(["abort", "skip"]) ?? "abort")!
        if policy == .abort, let extra = fields["maxErrors"] ?? fields["rejects"] {
            throw extra.error("only used with 'policy: skip' (policy abort stops at the first bad row)")
        }
        return ErrorPolicy(
            policy: policy,
            maxErrors: try fields["maxErrors"]?.nonNegativeInt() ?? 1000,
            rejects: try fields["rejects"].map { resolver.url(try $0.nonEmptyString()) })
    }

    private static func step(_ fields: [String: JobNode], root: JobNode, resolver: JobPathResolver) throws -> ImportStep {
        func required(_ name: String) throws -> JobNode {
            guard let node = fields[name] else { throw root.error("the \(root.path.isEmpty ? "job" : "step") has no '\(name)'; see jobs/README.md") }
            return node
        }
        let key = try fields["key"]?.stringOrList() ?? []
        if let node = fields["key"], key.isEmpty {
            throw node.error("an empty key list: name the attribute(s) that identify an object, or leave 'key' out to insert every row")
        }
        let mode: ImportMode
        if let modeNode = fields["mode"] {
            mode = ImportMode(rawValue: try modeNode.oneOf(ImportMode.allCases.map(\.rawValue)))!
            if mode != .insert && key.isEmpty {
                throw modeNode.error("mode \(mode.rawValue) finds objects by a key: give 'key' too (or use mode: insert)")
            }
        } else {
            mode = key.isEmpty ? .insert : .upsert
        }
        let sourceNode = try required("source")
        return ImportStep(
            source: try source(sourceNode, resolver),
            entity: try required("entity").nonEmptyString(),
            key: key,
            mode: mode,
            fields: try fields["fields"].map(Self.fields) ?? [],
            autoMatch: try fields["autoMatch"]?.bool() ?? true,
            relationships: try fields["relationships"].map(Self.relationships) ?? [],
            location: root.path.isEmpty ? root.file : "\(root.file) (\(root.path))")
    }

    private static func source(_ node: JobNode, _ resolver: JobPathResolver) throws -> SourceSettings {
        let fields: [String: JobNode]
        let pathNode: JobNode
        if node.isMapping {
            fields = try node.fields(allowed: ["path", "format", "gzip", "nulls", "delimiter", "header", "columns"])
            guard let path = fields["path"] else { throw node.error("the source needs a 'path' (\"-\" for standard input)") }
            pathNode = path
        } else {
            fields = [:]
            pathNode = node
        }
        let path = try pathNode.nonEmptyString()
        let url = path == "-" ? nil : resolver.url(path)
        var format: SourceFormat
        var gzip: Bool
        if let formatNode = fields["format"] {
            switch try formatNode.oneOf(["csv", "ndjson", "jsonl", "json"]) {
            case "csv": format = .csv(CSVDialect())
            case "ndjson", "jsonl": format = .ndjson
            default: format = .jsonArray
            }
            gzip = path.lowercased().hasSuffix(".gz")
        } else if let inferred = SourceFormat.inferred(fromPath: path) {
            (format, gzip) = inferred
        } else {
            throw pathNode.error(path == "-"
                ? "standard input has no extension to tell its format: add 'format: csv', 'format: ndjson' or 'format: json'"
                : "cannot tell the format from '\(path)': name it .csv, .ndjson, .jsonl or .json (optionally .gz), or add 'format:'")
        }
        if let gzipNode = fields["gzip"] { gzip = try gzipNode.bool() }
        let csvOnly = ["delimiter", "header", "columns"].compactMap { fields[$0] }
        if case .csv(var dialect) = format {
            if let delimiter = fields["delimiter"] {
                let text = try delimiter.string()
                let value = text == "\\t" || text == "tab" ? "\t" : text
                guard value.utf8.count == 1, let byte = value.utf8.first, byte != UInt8(ascii: "\""), byte != 10, byte != 13 else {
                    throw delimiter.error("expected one ASCII character other than a quote or line break (\"\\t\" for tab), found '\(text)'")
                }
                dialect.delimiter = byte
            }
            if let header = fields["header"] { dialect.hasHeader = try header.bool() }
            if let columns = fields["columns"] { dialect.columns = try columns.items().map { try $0.nonEmptyString() } }
            if !dialect.hasHeader && dialect.columns == nil {
                throw (fields["header"] ?? node).error("without a header row, name the columns: columns: [sku, name, …]")
            }
            format = .csv(dialect)
        } else if let extra = csvOnly.first {
            throw extra.error("only applies to CSV sources")
        }
        return SourceSettings(
            url: url, displayPath: path, format: format, gzip: gzip,
            nulls: try fields["nulls"].map { try $0.items().map { try $0.string() } } ?? [""])
    }

    private static func fields(_ node: JobNode) throws -> [FieldSettings] {
        try node.entries().map { attribute, value in
            var field = FieldSettings(
                attribute: attribute, origin: .field(FieldPath(attribute)), dateFormat: nil,
                timeZone: .utc, empty: nil, listed: true, location: "\(value.file):\(value.node.mark?.line ?? 0)")
            guard value.isMapping else {
                field.origin = .field(FieldPath(try value.nonEmptyString()))
                return field
            }
            let options = try value.fields(allowed: ["from", "value", "date", "timeZone", "empty"])
            switch (options["from"], options["value"]) {
            case (let from?, nil): field.origin = .field(FieldPath(try from.nonEmptyString()))
            case (nil, let constant?): field.origin = .constant(try constant.string())
            case (nil, nil): break
            case (_?, let constant?): throw constant.error("give either 'from' (a column) or 'value' (a constant), not both")
            }
            if let date = options["date"] {
                let text = try date.nonEmptyString()
                switch text {
                case "iso8601": field.dateFormat = .iso8601
                case "unix", "unix-seconds": field.dateFormat = .unixSeconds
                case "unix-ms", "unix-milliseconds": field.dateFormat = .unixMilliseconds
                default:
                    guard text.contains(where: \.isLetter) else {
                        throw date.error("expected iso8601, unix, unix-ms or a date pattern such as 'dd.MM.yyyy HH:mm'")
                    }
                    field.dateFormat = .pattern(text)
                }
            }
            if let zone = options["timeZone"] {
                let name = try zone.nonEmptyString()
                guard let timeZone = TimeZone(identifier: name) else {
                    throw zone.error("unknown time zone '\(name)'; use an IANA name such as Europe/Berlin or UTC")
                }
                field.timeZone = timeZone
            }
            if let empty = options["empty"] {
                field.empty = empty.isNull ? .null : FieldSettings.EmptyRule(rawValue: try empty.oneOf(["null", "default", "keep"]))!
            }
            return field
        }
    }

    private static func relationships(_ node: JobNode) throws -> [RelationshipSettings] {
        try node.entries().map { name, value in
            let options = try value.fields(allowed: ["from", "match", "create", "required", "separator"])
            guard let match = options["match"] else {
                throw value.error("say which attribute of the destination the key matches: match: name")
            }
            return RelationshipSettings(
                relationship: name,
                from: FieldPath(try options["from"]?.nonEmptyString() ?? name),
                match: try match.nonEmptyString(),
                create: try options["create"]?.bool() ?? false,
                required: try options["required"]?.bool() ?? false,
                separator: try options["separator"]?.nonEmptyString() ?? "|",
                location: "\(value.file):\(value.node.mark?.line ?? 0)")
        }
    }
}

/// Resolves paths in a job against the job file's folder (absolute paths stay as they are).
struct JobPathResolver {
    let directory: URL

    func url(_ path: String) -> URL {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL }
        return directory.appendingPathComponent(expanded).standardizedFileURL
    }
}
