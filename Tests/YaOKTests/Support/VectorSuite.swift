import Testing
@testable import YaOKSupport
@testable import YaOKCrypto

/// What every suite that checks docs/PROTOCOL.md's vectors looks up: one vector by name
/// (exactly one, or the document lost it), and an identity a vector names.
protocol VectorSuite {}

extension VectorSuite {
    func vector(_ name: String) throws -> ProtocolVector {
        let found = try ProtocolVector.all().filter { $0.name == name }
        try #require(found.count == 1, "vector \(name) missing from docs/PROTOCOL.md")
        return found[0]
    }

    /// The identity named by `v[key]` (an `identity-…` vector).
    func identity(_ v: ProtocolVector, _ key: String) throws -> Identity {
        let idv = try vector(try v.string(key))
        return try Identity(name: try idv.string("display_name"), secrets: try SecureBytes(copying: try idv.hex("secrets")))
    }
}
