import YaOK

/// A handle that holds a snapshot list (the outbox, open links, a history page, the
/// diagnostics' transports): its `_count` and its getters by index share one shape.
protocol SnapshotList: Handle {
    associatedtype Entry
    var entries: [Entry] { get }
    /// What one entry is called in "No … at index" messages.
    static var entryName: String { get }
}

extension SnapshotList {
    /// Entry `index` (size_t arrives as Int: an index above Int.max is negative): notFound
    /// past the end.
    func entry(_ index: Int) throws -> Entry { try element(entries, index, Self.entryName) }
}

/// The `_count` of a list handle (of kind `type`, named `kind` in messages) into `*out`
/// (named "out_count").
func listCount<H: SnapshotList>(_ list: OpaquePointer?, _ type: H.Type, _ kind: String,
                                _ out: UnsafeMutablePointer<Int>?) -> Int32 {
    fillValue({ try Handles.borrow(list, as: type, kind) }, out, "out_count") { $0.entries.count }
}

/// Element `index` of a snapshot (size_t arrives as Int: an index above Int.max is negative).
func element<T>(_ items: [T], _ index: Int, _ what: String) throws -> T {
    guard index >= 0, index < items.count else {
        throw YaOKError(.notFound, "No \(what) at index \(UInt(bitPattern: index)) (there are \(items.count))")
    }
    return items[index]
}
