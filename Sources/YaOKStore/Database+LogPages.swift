import Glibc
import YaOKSupport

/// Which tables and indexes the last commits wrote to the write-ahead log (issue 20): every
/// page a commit writes is a frame of the log, synced at the commit, so each index a hot
/// path touches costs a page. Tests and `yaok-bench send` name them, so that an index added
/// to (or back onto) the sending path shows as a named page, not only as a slower send.
/// Diagnostics only: it reads the log file and SQLite's `dbstat` table, which nothing in
/// production calls.
extension Database {
    /// The b-tree (table or index name; overflow pages by their table's name) of each frame
    /// of the log in `frames`, in the order written: with `checkpointByOwner`, `walFrames`
    /// before and after some commits (the log restarts at 0 after a complete
    /// `checkpointPassive`) bound what they wrote. A page no b-tree holds (the free list,
    /// the header page) is named "page N".
    package func logPages(frames: Range<Int>) throws -> [String] {
        guard !frames.isEmpty else { return [] }
        let pageSize = try rows("PRAGMA page_size") { $0.int(0) }.first ?? 4096
        let fd = Glibc.open(path + "-wal", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw YaOKError(.storage, "Cannot open the write-ahead log of \(path)") }
        defer { Glibc.close(fd) }
        // A 32-byte log header, then per frame a 24-byte header (page number first, big
        // endian) and the page.
        var pages: [Int] = []
        var header = [UInt8](repeating: 0, count: 4)
        for frame in frames {
            let offset = off_t(32 + frame * (24 + pageSize))
            guard pread(fd, &header, 4, offset) == 4 else {
                throw YaOKError(.storage, "The write-ahead log of \(path) has fewer than \(frames.upperBound) frames")
            }
            pages.append(header.reduce(0) { $0 << 8 | Int($1) })
        }
        var names: [Int: String] = [:]
        try query("SELECT pageno, name FROM dbstat WHERE pageno IN (\(Set(pages).map(String.init).joined(separator: ",")))") {
            names[$0.int(0)] = $0.text(1)
        }
        return pages.map { names[$0] ?? "page \($0)" }
    }
}
