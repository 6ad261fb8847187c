import CYaOK
import YaOK

/* ---- node ---- */

final class NodeHandle: Handle {
    let node: Node
    init(_ node: Node) { self.node = node }
}

/// YAOK_NODE_OPEN_* flags.
let nodeOpenTestFastKDF = YAOK_NODE_OPEN_TEST_FAST_KDF
/// YAOK_RESET_CONFIRM: a value that uninitialised memory or a stray `true` will not match.
let resetConfirm = YAOK_RESET_CONFIRM
/// YAOK_AUTO_LOCK_NEVER
let autoLockNever = Int64(YAOK_AUTO_LOCK_NEVER)

func node(_ pointer: OpaquePointer?) throws -> Node {
    try Handles.borrow(pointer, as: NodeHandle.self, "node").node
}

@c @implementation
public func yaok_node_open(_ dataDir: UnsafePointer<CChar>?, _ flags: UInt32,
                           _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    newHandle(out) { NodeHandle(try Node(dataDirectory: try string(dataDir, "data_dir"), options: try nodeOptions(flags))) }
}

/// YAOK_NODE_OPEN_* flags as the node's options.
private func nodeOptions(_ flags: UInt32) throws -> Node.Options {
    guard flags & ~nodeOpenTestFastKDF == 0 else { throw YaOKError(.invalidArgument, "Unknown flags \(flags)") }
    var options = Node.Options()
    if flags & nodeOpenTestFastKDF != 0 {
        // Test-only costs need the process's test-only opt-in: a production build that
        // passes the flag by mistake gets an error, not weak vaults.
        guard PINHashing.testCostsAllowedByEnvironment else {
            throw YaOKError(.invalidArgument, "YAOK_NODE_OPEN_TEST_FAST_KDF is for tests only: it needs \(PINHashing.testCostsVariable)=1 in the environment")
        }
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
    }
    return options
}

@c @implementation
public func yaok_node_free(_ node: OpaquePointer?) {
    // Unregistered first, so a second (or concurrent) free of the same handle is a no-op.
    guard let handle = Handles.take(node, as: NodeHandle.self) else { return }
    handle.node.close()
}

@c @implementation
public func yaok_node_setup(_ node: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ pin: UnsafePointer<CChar>?,
                            _ confirmation: UnsafePointer<CChar>?, _ outWarnings: UnsafeMutablePointer<UInt32>?) -> Int32 {
    nodeValue(node, outWarnings, "out_warnings") { n in
        try n.setup(name: try nameText(name, "name"), pin: try secret(pin, "pin"), confirmation: try secret(confirmation, "pin_confirmation")).warnings.abiCode
    }
}

@c @implementation
public func yaok_node_setup_v2(_ node: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ secret: UnsafePointer<CChar>?,
                               _ confirmation: UnsafePointer<CChar>?, _ outWarnings: UnsafeMutablePointer<UInt32>?,
                               _ outStrength: UnsafeMutablePointer<UInt32>?,
                               _ outEstimatedBits: UnsafeMutablePointer<UInt32>?) -> Int32 {
    fillValues({ try YaOKFFI.node(node) }, (outWarnings, "out_warnings"), (outStrength, "out_strength"), (outEstimatedBits, "out_estimated_bits")) { n in
        try n.setup(name: try nameText(name, "name"), pin: try string(secret, "secret"), confirmation: try string(confirmation, "confirmation")).codes
    }
}

@c @implementation
public func yaok_secret_check(_ secret: UnsafePointer<CChar>?, _ outStrength: UnsafeMutablePointer<UInt32>?,
                              _ outEstimatedBits: UnsafeMutablePointer<UInt32>?) -> Int32 {
    fillValues({ () }, (outStrength, "out_strength"), (outEstimatedBits, "out_estimated_bits")) { try SecretStrength.check(try string(secret, "secret")).codes }
}

extension SecretStrength {
    /// The strength level's rank (YAOK_STRENGTH_*) and the estimated bits.
    var codes: (UInt32, UInt32) { (level.rank, UInt32(clamping: estimatedBits)) }
}

extension SetupResult {
    /// yaok_node_setup_v2's out-values: YAOK_WARNING_* bits, strength rank, estimated bits.
    var codes: (UInt32, UInt32, UInt32) { (warnings.abiCode, strength.codes.0, strength.codes.1) }
}

@c @implementation
public func yaok_node_set_device_secret(_ node: OpaquePointer?, _ secret: UnsafePointer<UInt8>?, _ secretLength: Int) -> Int32 {
    withNode(node) { n in try withDeviceSecret(secret, secretLength) { try n.setDeviceSecret($0) } }
}

/// yaok_node_set_device_secret's argument: (NULL, 0) is none (nil), else a
/// YAOK_DEVICE_SECRET_BYTES key, copied for `body` and wiped after it.
private func withDeviceSecret(_ secret: UnsafePointer<UInt8>?, _ length: Int, _ body: ([UInt8]?) throws -> Void) throws {
    guard secret != nil || length != 0 else { return try body(nil) }
    try withKey(secret, length, Int(YAOK_DEVICE_SECRET_BYTES), "secret", "A device secret") { try body($0) }
}

/// A borrowed key of `size` bytes (`what` names it when the length is wrong), copied for
/// `body` and wiped after it.
private func withKey(_ key: UnsafePointer<UInt8>?, _ length: Int, _ size: Int, _ name: String, _ what: String,
                     _ body: ([UInt8]) throws -> Void) throws {
    guard length == size else { throw YaOKError(.invalidArgument, "\(what) is \(size) bytes") }
    var bytes = try fixedBytes(key, size, name)
    defer { Secrets.wipe(&bytes, bytes.count) }
    try body(bytes)
}

@c @implementation
public func yaok_node_unlock(_ node: OpaquePointer?, _ pin: UnsafePointer<CChar>?) -> Int32 {
    boundary { try YaOKFFI.node(node).unlock(pin: try secret(pin, "pin")) }
}

@c @implementation
public func yaok_node_unlock_platform_key(_ node: OpaquePointer?, _ key: UnsafePointer<UInt8>?, _ keyLength: Int) -> Int32 {
    withNode(node) { n in try withKey(key, keyLength, platformKeyBytes, "key", "A platform key") { try n.unlock(platformKey: $0) } }
}

@c @implementation
public func yaok_node_register_platform_key(_ node: OpaquePointer?, _ key: UnsafePointer<UInt8>?, _ keyLength: Int) -> Int32 {
    withNode(node) { n in try withKey(key, keyLength, platformKeyBytes, "key", "A platform key") { try n.registerPlatformKey($0) } }
}

/// YAOK_PLATFORM_KEY_BYTES
private let platformKeyBytes = Int(YAOK_PLATFORM_KEY_BYTES)

@c @implementation
public func yaok_node_remove_platform_key(_ node: OpaquePointer?) -> Int32 {
    boundary { try YaOKFFI.node(node).removePlatformKey() }
}

@c @implementation
public func yaok_node_lock(_ node: OpaquePointer?) -> Int32 {
    boundary { try YaOKFFI.node(node).lock() }
}

@c @implementation
public func yaok_node_set_auto_lock(_ node: OpaquePointer?, _ timeoutMs: Int64,
                                    _ outWarnings: UnsafeMutablePointer<UInt32>?) -> Int32 {
    nodeValue(node, outWarnings, "out_warnings") { n in try n.setAutoLock(try autoLock(timeoutMs)).abiCode }
}

/// yaok_node_set_auto_lock's timeout as a setting.
private func autoLock(_ timeoutMs: Int64) throws -> AutoLock {
    if timeoutMs == autoLockNever { return .never }
    guard timeoutMs > 0 else { throw YaOKError(.invalidArgument, "timeout_ms must be positive or YAOK_AUTO_LOCK_NEVER") }
    return .after(seconds: Double(timeoutMs) / 1000)
}

@c @implementation
public func yaok_node_status(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    nodeJSON(node, out) { n in try n.status().json }
}

@c @implementation
public func yaok_node_identity(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> Int32 {
    nodeHandle(node, out) { n in IdentityHandle(try n.identity()) }
}

@c @implementation
public func yaok_node_profile(_ node: OpaquePointer?, _ outJSON: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    fill({ () }, outJSON, "out_json") { _, out in try give(try YaOKFFI.node(node).profile().json.serialized, to: out) }
}

@c @implementation
public func yaok_node_reset(_ node: OpaquePointer?, _ confirm: UInt32) -> Int32 {
    boundary { try YaOKFFI.node(node).reset(confirm: confirm == resetConfirm) }
}
