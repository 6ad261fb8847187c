import YaOKSupport

/// The Bluetooth LE advertisement (docs/PROTOCOL.md §9): "a Ya OK node accepts L2CAP
/// connections here", and nothing about who: a random token that changes every few
/// minutes. It travels as one AD structure, Service Data for the 128-bit Ya OK service UUID:
///
///     ad = length (1) = 26 || 0x21 || uuid (16, little-endian) || version (1) = 0x01 || token (8)
///
/// 27 bytes; with the 3-byte Flags structure the kernel adds, 30 (legacy advertising holds 31).
struct BLEAdvert: Equatable, Sendable {
    /// e5fd7c71-576f-4cc0-a7c4-e1e0e2b7bbba, as written (big-endian).
    static let serviceUUID: [UInt8] = [0xe5, 0xfd, 0x7c, 0x71, 0x57, 0x6f, 0x4c, 0xc0,
                                       0xa7, 0xc4, 0xe1, 0xe0, 0xe2, 0xb7, 0xbb, 0xba]
    static let serviceUUIDString = "e5fd7c71-576f-4cc0-a7c4-e1e0e2b7bbba"
    /// AD type "Service Data - 128-bit UUID" (Bluetooth Assigned Numbers).
    static let adType: UInt8 = 0x21
    static let version: UInt8 = 0x01
    static let tokenLength = 8
    /// The AD structure's length byte: type, UUID, version, token.
    static let adLength = 1 + 16 + 1 + tokenLength
    /// The whole structure, length byte included.
    static let encodedLength = 1 + adLength

    /// Random, re-drawn every `BLETransport.Options.tokenLifetime`. Used only to recognise
    /// one's own advertisement and to decide which side connects (the lower token).
    let token: [UInt8]

    init(token: [UInt8]) {
        precondition(token.count == BLEAdvert.tokenLength)
        self.token = token
    }

    /// The advertising data given to the kernel (Add Advertising): this one AD structure.
    var encoded: [UInt8] {
        [UInt8(BLEAdvert.adLength), BLEAdvert.adType] + BLEAdvert.serviceUUID.reversed() + [BLEAdvert.version] + token
    }

    /// Finds the Ya OK structure in advertising (or scan response) data: a sequence of AD
    /// structures, `length (1) || type (1) || data (length − 1)`. nil when there is none, or
    /// the data is malformed before it (a length running past the end stops the walk),
    /// or the structure has another length or version (a later version is ignored, not
    /// misread). Other structures (flags, names, other services) are skipped.
    init?(parsing data: ArraySlice<UInt8>) {
        var i = data.startIndex
        while i < data.endIndex {
            let length = Int(data[i])
            if length == 0 { return nil }  // the rest is padding
            let end = i + 1 + length
            guard end <= data.endIndex else { return nil }
            if data[i + 1] == BLEAdvert.adType, length >= 17,
               data[(i + 2)..<(i + 18)].elementsEqual(BLEAdvert.serviceUUID.reversed()) {
                guard length == BLEAdvert.adLength, data[i + 18] == BLEAdvert.version else { return nil }
                token = Array(data[(i + 19)..<end])
                return
            }
            i = end
        }
        return nil
    }

    init?(parsing data: [UInt8]) { self.init(parsing: data[...]) }

    /// The tie-break, as on the LAN (§7): of two nodes that hear each other, the one whose
    /// token is smaller (unsigned bytes, first most significant) connects.
    static func connects(own: [UInt8], peer: [UInt8]) -> Bool {
        own.lexicographicallyPrecedes(peer)
    }
}
