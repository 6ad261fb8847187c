import CYaOK
import YaOK

/* ---- identity ---- */

final class IdentityHandle: Handle {
    let identity: Identity
    init(_ identity: Identity) { self.identity = identity }
}

/// Fingerprint formats, as YAOK_FINGERPRINT_* in the header.
func formatFingerprint(_ fingerprint: Fingerprint, _ format: UInt32) throws -> String {
    switch format {
    case UInt32(YAOK_FINGERPRINT_HEX): return fingerprint.hex
    case UInt32(YAOK_FINGERPRINT_GROUPED): return fingerprint.grouped
    case UInt32(YAOK_FINGERPRINT_SHORT): return fingerprint.short
    default: throw YaOKError(.invalidArgument, "Unknown fingerprint format \(format)")
    }
}

@c @implementation
public func yaok_identity_new(_ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    newHandle(out) { IdentityHandle(try Identity(name: try nameText(name, "name"))) }
}

@c @implementation
public func yaok_identity_restore(_ name: UnsafePointer<CChar>?, _ secrets: UnsafePointer<UInt8>?, _ secretsLength: Int,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    newHandle(out) { IdentityHandle(try Identity(name: try nameText(name, "name"), secrets: try identitySecrets(secrets, secretsLength))) }
}

/// The borrowed secrets of yaok_identity_restore (length checked first), copied straight
/// into guarded memory.
private func identitySecrets(_ secrets: UnsafePointer<UInt8>?, _ length: Int) throws -> SecureBytes {
    guard length == Identity.secretsLength else {
        throw YaOKError(.invalidArgument, "secrets must be \(Identity.secretsLength) bytes")
    }
    let secure = try SecureBytes(count: length)
    let source = try required(secrets, "secrets")
    secure.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: source, count: length)) }
    return secure
}

@c @implementation
public func yaok_identity_free(_ identity: OpaquePointer?) { Handles.release(identity, as: IdentityHandle.self) }

@c @implementation
public func yaok_identity_name(_ identity: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(identity, IdentityHandle.self, "identity", out) { $0.identity.name }
}

@c @implementation
public func yaok_identity_user_id(_ identity: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(identity, IdentityHandle.self, "identity", out) { $0.identity.publicIdentity.userID }
}

@c @implementation
public func yaok_identity_fingerprint(_ identity: OpaquePointer?, _ format: UInt32,
                                      _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    stringOut({ try formatFingerprint(try Handles.borrow(identity, as: IdentityHandle.self, "identity").identity.publicIdentity.fingerprint, format) },
              out, "out")
}

@c @implementation
public func yaok_identity_card(_ identity: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    handleString(identity, IdentityHandle.self, "identity", out) { $0.identity.card.text }
}
