import Foundation

extension FetchRequestTemplate {
    /// The template's predicate string parsed; nil when it has none.
    ///
    /// ```swift
    /// let predicate = try model.fetchRequestTemplate(named: "lowStock")!.parsedPredicate()
    /// predicate?.variableNames   // ["THRESHOLD"]
    /// ```
    public func parsedPredicate() throws -> FetchPredicate? {
        guard let predicateString, !predicateString.trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        do {
            return try FetchPredicate(format: predicateString)
        } catch {
            throw FetchPredicateError.invalidTemplate(name: name, reason: "its predicate '\(predicateString)' does not parse: \(error)")
        }
    }

    /// A fetch request from the template, its predicate's variables replaced by `substitute`.
    func fetchRequest(substituting substitute: (FetchPredicate) throws -> FetchPredicate) throws -> FetchRequest {
        var request = FetchRequest(entityName: entityName, predicate: try parsedPredicate().map(substitute))
        if let fetchLimit { request.fetchLimit = fetchLimit }
        if let fetchBatchSize { request.fetchBatchSize = fetchBatchSize }
        if let includesSubentities { request.includesSubentities = includesSubentities }
        if let includesPendingChanges { request.includesPendingChanges = includesPendingChanges }
        if let returnsObjectsAsFaults { request.returnsObjectsAsFaults = returnsObjectsAsFaults }
        return request
    }
}

extension ManagedObjectModel {
    /// A fetch request made from the model's fetch request template `name` (Core Data's
    /// `fetchRequestFromTemplate(withName:substitutionVariables:)`), its `$VARIABLES`
    /// replaced by `substitutionVariables`. The template's entity, predicate, fetch limit,
    /// batch size and subentity, pending-changes and faulting flags carry over; its result
    /// type does not (choose `fetch`, `fetchObjectIDs`, `fetchDictionaries` or `count`).
    ///
    /// ```swift
    /// // <fetchRequest name="lowStock" entity="Product" predicateString="stock < $THRESHOLD"/>
    /// let request = try model.fetchRequest(fromTemplateNamed: "lowStock", substitutionVariables: ["THRESHOLD": 5])
    /// let products = try context.fetch(request)
    /// ```
    ///
    /// - Throws: `FetchPredicateError.unknownTemplate` for a name the model lacks,
    ///   `FetchPredicateError.invalidTemplate` for a predicate that does not parse, and
    ///   `FetchPredicateError.missingVariable` for a variable given no value.
    public func fetchRequest(fromTemplateNamed name: String, substitutionVariables: [String: PredicateValue] = [:]) throws -> FetchRequest {
        guard let template = fetchRequestTemplate(named: name) else { throw FetchPredicateError.unknownTemplate(name) }
        return try template.fetchRequest { try $0.substituting(substitutionVariables) }
    }
}

extension ManagedObjectContext {
    /// The value of a fetched property of `object`: the objects its fetch request finds, with
    /// `$FETCH_SOURCE` standing for `object` (and `$FETCH_SOURCE.key.path` for the value at
    /// that path, read from `object` in memory), and `$FETCHED_PROPERTY` for the fetched
    /// property's description (`$FETCHED_PROPERTY.name`, `$FETCHED_PROPERTY.userInfo.KEY`).
    /// Unsaved changes count, as in any fetch. Unlike Core Data, the result is not cached: each
    /// call fetches anew.
    ///
    /// ```swift
    /// // Category has <fetchedProperty name="drills"> (userInfo prefix = "Drill") fetching Product with
    /// // predicateString="category == $FETCH_SOURCE AND name BEGINSWITH[c] $FETCHED_PROPERTY.userInfo.prefix"
    /// let drills = try context.fetchedProperty(named: "drills", of: tools)
    /// ```
    ///
    /// - Throws: `FetchPredicateError.unknownTemplate` when the object's entity has no fetched
    ///   property of that name, or the errors of parsing, substitution and fetching.
    public func fetchedProperty(named name: String, of object: ManagedObject) throws -> [ManagedObject] {
        guard let property = model.fetchedProperties(of: object.layout.name).first(where: { $0.name == name }) else {
            throw FetchPredicateError.unknownTemplate("\(object.layout.name).\(name)")
        }
        func resolve(_ variable: String, _ path: [String]) throws -> PredicateValue {
            switch variable {
            case "FETCH_SOURCE":
                return object.predicateValue(forKeyPath: path)
            case "FETCHED_PROPERTY":
                switch path {
                case ["name"]: return .string(property.name)
                case let keys where keys.count == 2 && keys[0] == "userInfo": return property.userInfo[keys[1]].map { .string($0) } ?? .null
                default: throw FetchPredicateError.unsupported("$FETCHED_PROPERTY.\(path.joined(separator: ".")); use $FETCHED_PROPERTY.name or $FETCHED_PROPERTY.userInfo.KEY")
                }
            default:
                throw FetchPredicateError.missingVariable(variable)
            }
        }
        return try fetch(property.fetchRequest.fetchRequest { try $0.substituting(resolve) })
    }
}
