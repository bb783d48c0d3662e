import Foundation
import Lade

/// CoreDataPlus's `SampleModel2` version 1, the model of the corpus stores
/// `alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V1.sqlite`:
/// transcribed with Lade's model API from the Swift source that builds it
/// (`SampleModel2+V1.swift.txt` beside the fixtures; no model file exists). Once stores open
/// with the model their `Z_MODELCACHE` carries, tests can read it from there instead.
///
/// Writer (abstract; age) ← Author (alias, siteURL; books) — Book (uniqueID, title, price,
/// cover, publishedAt, pagesCount = `pages.@count`; author, pages) ← GraphicNovel
/// (isBlackAndWhite) — Page (number, isBookmarked, content; book) — Feedback.
/// Fetched properties and validation predicates are left out: nothing here reads them.
public enum SampleModel2 {
    /// The corpus store, relative to the corpus root.
    public static let storeV1 = "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V1.sqlite"

    /// The same store, as the history tests name it.
    public static let v1Store = storeV1

    /// The model without the derivation: `pagesCount` a plain optional Integer 64.
    public static func v1() throws -> ManagedObjectModel { try model(derivation: nil) }

    /// The model; `derivation` replaces `pagesCount`'s expression (for the refusal tests; nil
    /// for a plain attribute).
    ///
    /// With `inverses: false`, `Book.pages` and `Page.book` name no inverse: the model of the
    /// store of issue 43, whose `ZPAGE` keeps `pages` in Core Data's owner column `Z1PAGES`.
    public static func model(derivation: String? = "pages.@count", derivedType: AttributeType = .integer64, inverses: Bool = true) throws -> ManagedObjectModel {
        let writer = EntityDescription(
            name: "Writer", isAbstract: true,
            attributes: [AttributeDescription(name: "age", type: .integer16, isOptional: false)])
        let author = EntityDescription(
            name: "Author", parentName: "Writer",
            attributes: [AttributeDescription(name: "alias", type: .string, isOptional: false), AttributeDescription(name: "siteURL", type: .uri)],
            relationships: [RelationshipDescription(name: "books", destinationEntityName: "Book", inverseName: "author", isToMany: true, deleteRule: .cascade)],
            uniquenessConstraints: [["alias"]],
            fetchIndexes: [FetchIndexDescription(name: "authorIndex", elements: [FetchIndexElement(propertyName: "alias")])])
        let book = EntityDescription(
            name: "Book",
            attributes: [
                AttributeDescription(name: "uniqueID", type: .uuid, isOptional: false),
                AttributeDescription(name: "title", type: .string, isOptional: false),
                AttributeDescription(name: "price", type: .decimal, isOptional: false),
                AttributeDescription(name: "cover", type: .transformable, isOptional: false),
                AttributeDescription(name: "publishedAt", type: .date, isOptional: false),
                AttributeDescription(name: "pagesCount", type: derivedType, derivationExpression: derivation),
            ],
            relationships: [
                RelationshipDescription(name: "author", destinationEntityName: "Author", inverseName: "books", isOptional: false, minCount: 1, maxCount: 1),
                RelationshipDescription(name: "pages", destinationEntityName: "Page", inverseName: inverses ? "book" : nil, isToMany: true, isOptional: false,
                                        minCount: 1, maxCount: 10_000, deleteRule: .cascade),
            ],
            uniquenessConstraints: [["uniqueID"]])
        let graphicNovel = EntityDescription(
            name: "GraphicNovel", parentName: "Book",
            attributes: [AttributeDescription(name: "isBlackAndWhite", type: .boolean, isOptional: false, defaultValue: .bool(false))])
        let page = EntityDescription(
            name: "Page",
            attributes: [
                AttributeDescription(name: "isBookmarked", type: .boolean, isOptional: false, defaultValue: .bool(false)),
                AttributeDescription(name: "number", type: .integer32, isOptional: false),
                AttributeDescription(name: "content", type: .transformable, isOptional: false),
            ],
            relationships: [RelationshipDescription(name: "book", destinationEntityName: "Book", inverseName: inverses ? "pages" : nil, isOptional: false, minCount: 1, maxCount: 1)])
        let feedback = EntityDescription(
            name: "Feedback",
            attributes: [
                AttributeDescription(name: "authorAlias", type: .string, isOptional: false),
                AttributeDescription(name: "bookID", type: .uuid, isOptional: false),
                AttributeDescription(name: "comment", type: .string),
                AttributeDescription(name: "rating", type: .double, isOptional: false),
            ])
        return try ManagedObjectModel(entities: [writer, author, book, graphicNovel, page, feedback])
    }
}
