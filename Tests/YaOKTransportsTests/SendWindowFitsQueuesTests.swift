import Testing
@testable import YaOKNode
@testable import YaOKTransports

/// What a node leaves unconfirmed on a link (`Node.linkWindowBytes`) must fit what every
/// transport queues for writing and what the receiver queues for one link, with room for
/// the receipts, acks and keepalives that go beside it: a write queue that overflows drops
/// the connection (LAN, BLE) and every packet on it waits for a retry. The window was
/// raised from 128 to 512 KiB (a batch of 10 KB messages took turns with the receiver's
/// disk syncs); the LAN's queue had been 256 KiB.
@Suite struct SendWindowFitsQueuesTests {
    @Test func theWindowFitsEveryQueueItFills() {
        let window = Node.linkWindowBytes
        #expect(window >= 4 * 128 * 1024, "several receiver batches of 10 KB messages deep")
        let margin = 64 * 1024
        #expect(window + margin <= LANTransport.Options().maxWriteQueueBytes)
        #expect(window + margin <= BLETransport.Options().maxWriteQueueBytes)
        #expect(window + margin <= RelayTransport.Options().maxWriteQueue)
        #expect(window + margin <= Node.maxQueuedBytesPerLink)
    }
}
