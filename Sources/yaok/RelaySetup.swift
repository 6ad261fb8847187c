import YaOK

/// Builds the relay transport from `run`'s options.
enum RelaySetup {
    static func transport(address: String, pin: String?, caFile: String?) throws -> RelayTransport {
        let pinBytes = try pin.map { text -> [UInt8] in
            guard let bytes = Hex.decode(text), bytes.count == 32 else {
                throw YaOKError(.invalidArgument, "--relay-pin takes the 64 hex digits yaok-relay prints as `pin:`")
            }
            return bytes
        }
        return try RelayTransport(address: RelayAddress(address), pin: pinBytes, caFile: caFile)
    }
}
