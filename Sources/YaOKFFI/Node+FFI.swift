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
    boundary {
        let out = try required(out, "out")
        let dir = try string(dataDir, "data_dir")
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
        out.pointee = Handles.make(NodeHandle(try Node(dataDirectory: dir, options: options)))
    }
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
        let result = try n.setup(name: try nameText(name, "name"), pin: try secret(pin, "pin"),
                                 confirmation: try secret(confirmation, "pin_confirmation"))
        return result.warnings.rawValue
    }
}

@c @implementation
public func yaok_node_setup_v2(_ node: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ secret: UnsafePointer<CChar>?,
                               _ confirmation: UnsafePointer<CChar>?, _ outWarnings: UnsafeMutablePointer<UInt32>?,
                               _ outStrength: UnsafeMutablePointer<UInt32>?,
                               _ outEstimatedBits: UnsafeMutablePointer<UInt32>?) -> Int32 {
    withNode(node) { n in
        let warnings = try required(outWarnings, "out_warnings")
        let strength = try required(outStrength, "out_strength")
        let bits = try required(outEstimatedBits, "out_estimated_bits")
        let result = try n.setup(name: try nameText(name, "name"), pin: try string(secret, "secret"),
                                 confirmation: try string(confirmation, "confirmation"))
        warnings.pointee = result.warnings.rawValue
        strength.pointee = result.strength.level.rank
        bits.pointee = UInt32(clamping: result.strength.estimatedBits)
    }
}

@c @implementation
public func yaok_secret_check(_ secret: UnsafePointer<CChar>?, _ outStrength: UnsafeMutablePointer<UInt32>?,
                              _ outEstimatedBits: UnsafeMutablePointer<UInt32>?) -> Int32 {
    boundary {
        let strength = try required(outStrength, "out_strength")
        let bits = try required(outEstimatedBits, "out_estimated_bits")
        let result = try SecretStrength.check(try string(secret, "secret"))
        strength.pointee = result.level.rank
        bits.pointee = UInt32(clamping: result.estimatedBits)
    }
}

@c @implementation
public func yaok_node_set_device_secret(_ node: OpaquePointer?, _ secret: UnsafePointer<UInt8>?, _ secretLength: Int) -> Int32 {
    withNode(node) { n in
        if secret == nil && secretLength == 0 {
            try n.setDeviceSecret(nil)
            return
        }
        guard secretLength == 32 else { throw YaOKError(.invalidArgument, "A device secret is 32 bytes") }
        var bytes = try fixedBytes(secret, 32, "secret")
        defer { Secrets.wipe(&bytes, bytes.count) }
        try n.setDeviceSecret(bytes)
    }
}

@c @implementation
public func yaok_node_unlock(_ node: OpaquePointer?, _ pin: UnsafePointer<CChar>?) -> Int32 {
    boundary { try YaOKFFI.node(node).unlock(pin: try secret(pin, "pin")) }
}

@c @implementation
public func yaok_node_unlock_platform_key(_ node: OpaquePointer?, _ key: UnsafePointer<UInt8>?, _ keyLength: Int) -> Int32 {
    withNode(node) { n in
        var bytes = try platformKeyBytes(key, keyLength)
        defer { Secrets.wipe(&bytes, bytes.count) }
        try n.unlock(platformKey: bytes)
    }
}

@c @implementation
public func yaok_node_register_platform_key(_ node: OpaquePointer?, _ key: UnsafePointer<UInt8>?, _ keyLength: Int) -> Int32 {
    withNode(node) { n in
        var bytes = try platformKeyBytes(key, keyLength)
        defer { Secrets.wipe(&bytes, bytes.count) }
        try n.registerPlatformKey(bytes)
    }
}

private func platformKeyBytes(_ key: UnsafePointer<UInt8>?, _ length: Int) throws -> [UInt8] {
    guard length == 32 else { throw YaOKError(.invalidArgument, "A platform key is 32 bytes") }
    return try fixedBytes(key, 32, "key")
}

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
    nodeValue(node, outWarnings, "out_warnings") { n in
        let setting: AutoLock
        if timeoutMs == autoLockNever {
            setting = .never
        } else {
            guard timeoutMs > 0 else { throw YaOKError(.invalidArgument, "timeout_ms must be positive or YAOK_AUTO_LOCK_NEVER") }
            setting = .after(seconds: Double(timeoutMs) / 1000)
        }
        return try n.setAutoLock(setting).rawValue
    }
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
    boundary {
        let out = try required(outJSON, "out_json")
        try give(try YaOKFFI.node(node).profile().json.serialized, to: out)
    }
}

@c @implementation
public func yaok_node_reset(_ node: OpaquePointer?, _ confirm: UInt32) -> Int32 {
    boundary { try YaOKFFI.node(node).reset(confirm: confirm == resetConfirm) }
}
