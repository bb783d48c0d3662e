import Foundation
import Lade

/// The model of the corpus's `SampleModel2_V1.sqlite` (alemar11/CoreDataPlus), written in Lade's
/// terms from the Swift source that builds it in Core Data (`SampleModel2+V1.swift.txt`): the
/// store has no model file. Until Lade reads a store's own model (`Z_MODELCACHE`), tests of that
/// store build it here.
///
/// Left as they are in Core Data's store but not in Core Data's model: `Book.pagesCount` is a
/// plain optional Integer 64 (Core Data's is derived, `pages.@count`), `Author`'s two fetched
/// properties and `Book.title`'s validation predicates are left out (they have no columns), and
/// the transformable attributes carry their archived bytes without a transformer.
public enum SampleModel2 {
    public static let v1Store = "alemar11/CoreDataPlus/Tests/Resources/SampleModel2/Fixtures/SampleModel2_V1.sqlite"

    public static func v1() throws -> ManagedObjectModel {
        let writer = EntityDescription(
            name: "Writer", isAbstract: true,
            attributes: [AttributeDescription(name: "age", type: .integer16, isOptional: false)])
        let author = EntityDescription(
            name: "Author", parentName: "Writer",
            attributes: [
                AttributeDescription(name: "alias", type: .string, isOptional: false),
                AttributeDescription(name: "siteURL", type: .uri),
            ],
            relationships: [
                RelationshipDescription(name: "books", destinationEntityName: "Book", inverseName: "author", isToMany: true, deleteRule: .cascade),
            ],
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
                AttributeDescription(name: "pagesCount", type: .integer64),
            ],
            relationships: [
                RelationshipDescription(name: "author", destinationEntityName: "Author", inverseName: "books", isOptional: false, minCount: 1, maxCount: 1),
                RelationshipDescription(name: "pages", destinationEntityName: "Page", inverseName: "book", isToMany: true, isOptional: false,
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
            relationships: [
                RelationshipDescription(name: "book", destinationEntityName: "Book", inverseName: "pages", isOptional: false, minCount: 1, maxCount: 1),
            ])
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
