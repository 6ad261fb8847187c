internal import COpenSSL

/// The relay protocol's ALPN name (PROTOCOL.md §8.1). The client offers only it; the server
/// refuses a ClientHello without it, so a client of some other protocol (or a scanner)
/// fails in the handshake rather than after it.
enum ALPN {
    static let name = "yaok-relay/1"

    /// The wire form SSL_CTX_set_alpn_protos takes: a length byte, then the name.
    static let wire: [UInt8] = [UInt8(name.utf8.count)] + Array(name.utf8)

    /// Whether an agreed protocol (SSL_get0_alpn_selected) is ours.
    static func isOurs(_ selected: UnsafePointer<UInt8>?, _ length: UInt32) -> Bool {
        guard let selected, Int(length) == wire.count - 1 else { return false }
        return UnsafeBufferPointer(start: selected, count: Int(length)).elementsEqual(wire.dropFirst())
    }

    /// Server: installs the two callbacks below.
    static func require(on context: OpaquePointer) {
        SSL_CTX_set_client_hello_cb(context, clientHello, nil)
        SSL_CTX_set_alpn_select_cb(context, select, nil)
    }

    /// Without this a ClientHello that has no ALPN extension at all would pass: OpenSSL
    /// calls the select callback only when the client offers something.
    private static let clientHello: SSL_client_hello_cb_fn = { ssl, alert, _ in
        var data: UnsafePointer<UInt8>?
        var length = 0
        let type = UInt32(TLSEXT_TYPE_application_layer_protocol_negotiation)
        if SSL_client_hello_get0_ext(ssl, type, &data, &length) == 1 { return SSL_CLIENT_HELLO_SUCCESS }
        TLSConnection.from(ssl)?.rejection = "the client did not offer ALPN \(ALPN.name)"
        alert?.pointee = SSL_AD_NO_APPLICATION_PROTOCOL
        return SSL_CLIENT_HELLO_ERROR
    }

    /// Picks our name from the client's list (entries of a length byte and a name); a list
    /// without it ends the handshake with a no_application_protocol alert.
    private static let select: SSL_CTX_alpn_select_cb_func = { ssl, out, outLength, list, listLength, _ in
        var offered: [String] = []
        if let list {
            var i = 0
            let count = Int(listLength)
            while i < count {
                let length = Int(list[i])
                guard length > 0, i + 1 + length <= count else { break }
                let entry = UnsafeBufferPointer(start: list + i + 1, count: length)
                if entry.elementsEqual(ALPN.wire.dropFirst()) {
                    // OpenSSL copies the choice before `list` goes away.
                    out?.pointee = list + i + 1
                    outLength?.pointee = UInt8(length)
                    return SSL_TLSEXT_ERR_OK
                }
                offered.append(String(decoding: entry, as: UTF8.self))
                i += 1 + length
            }
        }
        TLSConnection.from(ssl)?.rejection =
            "the client offered ALPN \(offered.joined(separator: ", ")), not \(ALPN.name)"
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
}
