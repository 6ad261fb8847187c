import YaOKWire

/// A mailbox ID held inline (issue 17 §2, compact cursors): 32 bytes in four words, where
/// `MailboxID` holds a heap array (an allocation of ~80 bytes each). The relay keeps its
/// per-subscription state keyed by this; it makes a `MailboxID` again only for a frame.
struct MailboxKey: Hashable, Comparable {
    let a: UInt64, b: UInt64, c: UInt64, d: UInt64

    init(_ mailbox: MailboxID) {
        // A MailboxID is always 32 bytes (its init checks).
        let bytes = mailbox.bytes
        func word(_ i: Int) -> UInt64 {
            var w: UInt64 = 0
            for j in 0..<8 { w = w << 8 | UInt64(bytes[i * 8 + j]) }
            return w
        }
        (a, b, c, d) = (word(0), word(1), word(2), word(3))
    }

    /// The first 8 bytes: the relay-wide index's key (mailbox IDs are public keys, so
    /// their prefixes spread; a shared prefix costs a look-up, never a wrong delivery).
    var prefix: UInt64 { a }

    /// As a `MailboxID` again (always 32 bytes, so never nil), for a frame or a store read.
    var mailboxID: MailboxID? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for w in [a, b, c, d] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: w >> UInt64(shift))) }
        }
        return try? MailboxID(bytes: bytes)
    }

    static func < (l: MailboxKey, r: MailboxKey) -> Bool {
        (l.a, l.b, l.c, l.d) < (r.a, r.b, r.c, r.d)
    }
}
