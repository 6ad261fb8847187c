import Foundation

/// `yaok-store-writer`, the helper the kill tests run as a child (a test-target dependency,
/// built next to the test bundle; the .xctest bundle may be a directory one level deeper).
enum StoreWriterExecutable {
    static var path: String {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var url = bin.appendingPathComponent("yaok-store-writer")
        if !FileManager.default.fileExists(atPath: url.path) {
            url = bin.deletingLastPathComponent().appendingPathComponent("yaok-store-writer")
        }
        return url.path
    }
}
