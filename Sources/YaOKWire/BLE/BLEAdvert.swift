/// The Bluetooth LE advertisement (docs/PROTOCOL.md §9.1): "a Ya OK node accepts L2CAP
/// connections here, on this PSM", and nothing about who: a random token that changes every
/// few minutes. It travels as one AD structure, Service Data for the 128-bit Ya OK service
/// UUID. Version 2 (sent):
///
///     ad = length (1) = 27 || 0x21 || uuid (16, little-endian) || version (1) = 0x02 || token (8) || psm (1)
///
/// 28 bytes; with the 3-byte Flags structure the kernel adds, 31: exactly what legacy
/// advertising holds. The PSM is one byte because LE credit-based channels take SPSMs
/// 0x0001–0x00FF only, and a phone's listener gets a dynamic one (0x80–0xFF) it must
/// advertise. Version 1 (still read: the PSM was the fixed 0x0081):
///
///     ad = length (1) = 26 || 0x21 || uuid (16, little-endian) || version (1) = 0x01 || token (8)
///
/// Pure (the wire target): the fuzzer builds it (scripts/fuzz).
package struct BLEAdvert: Equatable, Sendable {
    /// e5fd7c71-576f-4cc0-a7c4-e1e0e2b7bbba, as written (big-endian).
    package static let serviceUUID: [UInt8] = [0xe5, 0xfd, 0x7c, 0x71, 0x57, 0x6f, 0x4c, 0xc0,
                                               0xa7, 0xc4, 0xe1, 0xe0, 0xe2, 0xb7, 0xbb, 0xba]
    package static let serviceUUIDString = "e5fd7c71-576f-4cc0-a7c4-e1e0e2b7bbba"
    /// AD type "Service Data - 128-bit UUID" (Bluetooth Assigned Numbers).
    package static let adType: UInt8 = 0x21
    /// The version this node sends.
    package static let version: UInt8 = 0x02
    package static let tokenLength = 8
    /// The AD structure's length byte: type, UUID, version, token, PSM.
    package static let adLength = 1 + 16 + 1 + tokenLength + 1
    /// The whole structure, length byte included.
    package static let encodedLength = 1 + adLength
    /// Version 1's length byte (no PSM).
    package static let adLengthVersion1 = 1 + 16 + 1 + tokenLength
    /// The PSM a version-1 advertiser listens on.
    package static let version1PSM: UInt16 = 0x0081
    /// The Flags structure's value every advertiser should send: LE General Discoverable
    /// (0x02) and BR/EDR Not Supported (0x04). Receivers do not check it.
    package static let flags: UInt8 = 0x06

    /// Random, re-drawn every few minutes. Used only to recognise one's own advertisement and
    /// to decide which side connects (the lower token).
    package let token: [UInt8]
    /// Where the advertiser accepts L2CAP LE credit-based channels: 0x01–0xFF.
    package let psm: UInt16

    package init(token: [UInt8], psm: UInt16 = BLEAdvert.version1PSM) {
        precondition(token.count == BLEAdvert.tokenLength && (1...0xff).contains(psm))
        self.token = token
        self.psm = psm
    }

    /// The advertising data given to the kernel (Add Advertising): this one AD structure,
    /// version 2.
    package var encoded: [UInt8] {
        [UInt8(BLEAdvert.adLength), BLEAdvert.adType] + BLEAdvert.serviceUUID.reversed() + [BLEAdvert.version] + token
            + [UInt8(psm)]
    }

    /// What a version-1 node sends (no PSM; it listens on 0x0081). For tests and the fuzzer.
    package var encodedVersion1: [UInt8] {
        [UInt8(BLEAdvert.adLengthVersion1), BLEAdvert.adType] + BLEAdvert.serviceUUID.reversed() + [0x01] + token
    }

    /// Finds the Ya OK structure in advertising (or scan response) data: a sequence of AD
    /// structures, `length (1) || type (1) || data (length − 1)`. nil when there is none, or
    /// the data is malformed before it (a length running past the end stops the walk), or
    /// the structure is not exactly version 1 or version 2 with that version's length, or a
    /// version-2 PSM is 0. A later version is ignored, not misread. Other structures (flags,
    /// names, other services) are skipped.
    package init?(parsing data: ArraySlice<UInt8>) {
        var i = data.startIndex
        while i < data.endIndex {
            let length = Int(data[i])
            if length == 0 { return nil }  // the rest is padding
            let end = i + 1 + length
            guard end <= data.endIndex else { return nil }
            if data[i + 1] == BLEAdvert.adType, length >= 17,
               data[(i + 2)..<(i + 18)].elementsEqual(BLEAdvert.serviceUUID.reversed()) {
                guard length >= 18 else { return nil }
                let tokenStart = i + 19
                switch data[i + 18] {
                case 0x01 where length == BLEAdvert.adLengthVersion1:
                    token = Array(data[tokenStart..<end])
                    psm = BLEAdvert.version1PSM
                case 0x02 where length == BLEAdvert.adLength && data[end - 1] != 0:
                    token = Array(data[tokenStart..<(end - 1)])
                    psm = UInt16(data[end - 1])
                default:
                    return nil
                }
                return
            }
            i = end
        }
        return nil
    }

    package init?(parsing data: [UInt8]) { self.init(parsing: data[...]) }

    /// The tie-break, as on the LAN (§7): of two nodes that hear each other, the one whose
    /// token is smaller (unsigned bytes, first most significant) connects.
    package static func connects(own: [UInt8], peer: [UInt8]) -> Bool {
        own.lexicographicallyPrecedes(peer)
    }
}
