import CYaOK
import Foundation
import Testing
import YaOKFFI

/// Every entry point is `@c @implementation` (SE-0495): the compiler checks each against its
/// declaration in include/yaok.h (CYaOK), so a parameter or return type that drifts from the
/// header fails the build of the library itself (and an implementation of a function the
/// header does not declare is refused). What the compiler cannot see is a header function
/// with no implementation: this test looks each declared name up in the running process,
/// where YaOKFFI is linked. (scripts/check-abi compares the release library's exports with
/// the header too.)
@Suite struct HeaderSignatureTests {
    @Test func everyHeaderFunctionIsImplemented() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let header = try String(contentsOf: root.appendingPathComponent("include/yaok.h"), encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"^(?!typedef)[a-z_0-9 \*]*\b(yaok_[a-z0-9_]+)\s*\("#, options: [.anchorsMatchLines])
        let range = NSRange(header.startIndex..., in: header)
        let declared = Set(regex.matches(in: header, range: range).compactMap {
            Range($0.range(at: 1), in: header).map { String(header[$0]) }
        })
        #expect(declared.count > 100)
        // Referenced once so the linker keeps the FFI module in the test binary.
        _ = CYaOK.yaok_abi_version()
        let process = dlopen(nil, RTLD_NOW)
        let missing = declared.filter { dlsym(process, $0) == nil }.sorted()
        #expect(missing.isEmpty, "declared in include/yaok.h, not implemented: \(missing)")
    }
}
