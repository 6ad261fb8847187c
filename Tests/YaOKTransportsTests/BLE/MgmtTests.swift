import Testing
@testable import YaOKTransports

/// The mgmt commands the transport sends and the events it reads (BlueZ doc/mgmt-api),
/// byte for byte; short or odd packets are refused, never read out of bounds.
@Suite struct MgmtTests {
    @Test func commandsAreLittleEndianWithAHeader() {
        #expect(Mgmt.command(.readIndexList, index: Mgmt.indexNone) == [0x03, 0x00, 0xff, 0xff, 0x00, 0x00])
        #expect(Mgmt.command(.startDiscovery, index: 1, [Mgmt.discoveryTypeLE]) == [0x23, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06])
        let data: [UInt8] = [1, 2, 3]
        let add = Mgmt.addAdvertising(index: 2, instance: 5, data: data)
        // opcode 0x003E, index 2, length 11 + 3; instance, flags (connectable | discoverable),
        // duration 0, timeout 0, data length, scan response length 0, data.
        #expect(add == [0x3e, 0x00, 0x02, 0x00, 14, 0x00, 5, 0x03, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 2, 3])
    }

    @Test func deviceFound() {
        let eir = BLEAdvert(token: Array(1...8)).encoded
        let params: [UInt8] = [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00, 1, 0xC4, 0, 0, 0, 0] + Mgmt.le16(UInt16(eir.count)) + eir
        let packet = Mgmt.le16(0x0012) + Mgmt.le16(1) + Mgmt.le16(UInt16(params.count)) + params
        guard case .deviceFound(let index, let address, let rssi, let flags, let got)? = Mgmt.parse(packet[...]) else {
            Issue.record("not a device found event")
            return
        }
        #expect(index == 1 && rssi == -60 && flags == 0 && got == eir)
        #expect(address == BLEAddress(bytes: [0x00, 0xAA, 0x01, 0x00, 0x00, 0x00], kind: .lePublic))
        // The EIR length says more than there is: not read.
        var short = packet
        short[4] = UInt8(params.count - 1)
        #expect(Mgmt.parse(short.dropLast()[...]) == .other(index: 1, code: 0x0012))
    }

    @Test func commandCompleteAndOthers() {
        let complete = Mgmt.le16(0x0001) + Mgmt.le16(0) + Mgmt.le16(5) + [0x3e, 0x00, 0x0d, 0x07, 0x08]
        #expect(Mgmt.parse(complete[...]) == .commandComplete(index: 0, opcode: 0x3e, status: 0x0d, data: [7, 8]))
        let settings = Mgmt.le16(0x0006) + Mgmt.le16(1) + Mgmt.le16(4) + Mgmt.le32(0x601)
        #expect(Mgmt.parse(settings[...]) == .newSettings(index: 1, settings: 0x601))
        let discovering = Mgmt.le16(0x0013) + Mgmt.le16(0) + Mgmt.le16(2) + [6, 1]
        #expect(Mgmt.parse(discovering[...]) == .discovering(index: 0, type: 6, on: true))
        #expect(Mgmt.parse((Mgmt.le16(0x0005) + Mgmt.le16(3) + Mgmt.le16(0))[...]) == .indexRemoved(index: 3))
        #expect(Mgmt.parse([0x01, 0x00, 0x00][...]) == nil)                                      // no header
        #expect(Mgmt.parse((Mgmt.le16(0x0001) + Mgmt.le16(0) + Mgmt.le16(9) + [1])[...]) == nil)  // shorter than it says
        #expect(Mgmt.parse((Mgmt.le16(0x0001) + Mgmt.le16(0) + Mgmt.le16(1) + [1])[...]) == .other(index: 0, code: 1))
    }

    @Test func replies() {
        #expect(Mgmt.parseIndexList([2, 0, 0, 0, 1, 0]) == [0, 1])
        #expect(Mgmt.parseIndexList([3, 0, 0, 0]) == nil)
        var info: [UInt8] = [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00, 9, 0x3f, 0x00] + Mgmt.le32(0x2ff) + Mgmt.le32(0x201) + [0, 0, 0]
        info += Array("ble-a".utf8) + [UInt8](repeating: 0, count: 244) + [UInt8](repeating: 0, count: 11)
        let parsed = Mgmt.parseInfo(info)
        #expect(parsed?.address.text == "00:AA:01:00:00:00" && parsed?.address.kind == .lePublic)
        #expect(parsed?.supported == 0x2ff && parsed?.current == 0x201 && parsed?.name == "ble-a")
        #expect(Mgmt.parseInfo(Array(info.prefix(19))) == nil)
        #expect(Mgmt.parseAdvertisingFeatures(Mgmt.le32(0xffff) + [31, 31, 5, 2, 1, 2]) ==
                Mgmt.AdvertisingFeatures(maxDataLength: 31, maxInstances: 5, instances: [1, 2]))
        #expect(Mgmt.parseAdvertisingFeatures(Mgmt.le32(0xffff) + [31, 31, 5, 3, 1, 2]) == nil)
    }

    @Test func removeAdvertisingAndPrivacy() {
        #expect(Mgmt.removeAdvertising(index: 1, instance: 5) == [0x3f, 0x00, 0x01, 0x00, 0x01, 0x00, 5])
        // Read Controller Information with the privacy setting (bit 13) on, and off.
        func info(_ current: UInt32) -> [UInt8] {
            [0x00, 0x00, 0x00, 0x01, 0xAA, 0x00, 9, 0x3f, 0x00] + Mgmt.le32(0xffff) + Mgmt.le32(current) + [0, 0, 0]
        }
        #expect(Mgmt.parseInfo(info(0x2201))?.privacy == true)
        #expect(Mgmt.parseInfo(info(0x0201))?.privacy == false)
        #expect(Mgmt.Setting.privacy == 0x2000)
    }

    /// Every event the transport reads, encoded as the kernel writes it, reads back the same
    /// (the fake kernel of the tests and the fuzzer's round trip rely on it).
    @Test func eventsRoundTrip() {
        let address = BLEAddress(bytes: [0x00, 0xAA, 0x01, 0x00, 0x00, 0x07], kind: .leRandom)
        let events: [Mgmt.Event] = [
            .commandComplete(index: 0, opcode: 0x3e, status: 0, data: [1]),
            .commandStatus(index: 2, opcode: 0x23, status: 0x0a),
            .indexAdded(index: 1), .indexRemoved(index: 1),
            .newSettings(index: 0, settings: 0x2601),
            .deviceFound(index: 0, address: address, rssi: -70, flags: 4, eir: BLEAdvert(token: Array(1...8)).encoded),
            .discovering(index: 0, type: 6, on: false),
            .other(index: 3, code: 0x0b),
        ]
        for event in events { #expect(Mgmt.parse(Mgmt.encode(event)[...]) == event) }
    }

    @Test func hostilePackets() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            var p = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if p.count >= 6, Bool.random(using: &rng) {  // plausible headers: a known event, a fitting length
                let codes: [UInt16] = [1, 2, 4, 5, 6, 0x12, 0x13]
                p[0] = UInt8(codes.randomElement(using: &rng)!)
                p[1] = 0
                p[4] = UInt8(p.count - 6)
                p[5] = 0
            }
            if let event = Mgmt.parse(p[...]) { #expect(Mgmt.parse(Mgmt.encode(event)[...]) == event) }
            _ = Mgmt.parseInfo(p)
            _ = Mgmt.parseIndexList(p)
            _ = Mgmt.parseAdvertisingFeatures(p)
        }
    }
}
