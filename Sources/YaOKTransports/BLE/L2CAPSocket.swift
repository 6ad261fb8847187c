import Glibc
import CBluetooth
import YaOKSupport
import YaOKSystem

/// L2CAP LE credit-based channels (CoC) through the kernel's sockets:
/// `socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)` bound to an LE address and a PSM.
/// Each send is one SDU, each receive one SDU: the channel keeps unit boundaries, so the
/// BLE transport needs no stream framing. The calls are the shared ones (`YaOKSystem.Socket`:
/// non-blocking, close-on-exec, errno captured); what is here is Bluetooth's: the address
/// struct, the MTU options, the errors start-up reports.
enum L2CAPSocket {
    /// socket(2) + bind(2) to the adapter's address and `psm` (0: the kernel picks none,
    /// for outgoing channels) + BT_RCVMTU (which must follow bind: bind makes it LE CoC).
    static func open(adapter: BLEAddress, psm: UInt16, receiveMTU: Int, sendBuffer: Int) throws -> Int32 {
        let fd: Int32
        switch Socket.open(domain: AF_BLUETOOTH, type: Int32(SOCK_SEQPACKET.rawValue), protocol: BTPROTO_L2CAP) {
        case .success(let opened): fd = opened
        case .failure(let failure): throw BLEUnavailable.from(errno: failure.code, doing: "socket(BTPROTO_L2CAP)")
        }
        var ok = false
        defer { if !ok { Socket.close(fd) } }
        if let failure = Socket.bind(fd, sockaddr(adapter, psm: psm)) {
            throw bindFailure(failure.code, psm: psm, adapter: adapter)
        }
        if let failure = Socket.setOption(fd, SOL_BLUETOOTH, BT_RCVMTU, value: UInt16(clamping: receiveMTU)) {
            throw BLEUnavailable.from(errno: failure.code, doing: "setting the L2CAP receive MTU")
        }
        // The kernel allocates all of an SDU's PDUs before queueing any, charged to the send
        // buffer: with the default buffer large SDUs never go. SO_SNDBUFFORCE needs
        // CAP_NET_ADMIN (which mgmt needs anyway); SO_SNDBUF is the fallback.
        let size = Int32(clamping: sendBuffer)
        if Socket.setOption(fd, SOL_SOCKET, SO_SNDBUFFORCE, size) != nil {
            Socket.setOption(fd, SOL_SOCKET, SO_SNDBUF, size)
        }
        ok = true
        return fd
    }

    /// Why bind(2) failed, for `start` to throw (a `BLEUnavailable`: LINK_FAILED at the C API).
    static func bindFailure(_ code: Int32, psm: UInt16, adapter: BLEAddress) -> BLEUnavailable {
        code == EADDRINUSE ? .psmInUse(psm, adapter: adapter)
            : .from(errno: code, doing: "binding an L2CAP socket to \(adapter.text)")
    }

    static func sockaddr(_ address: BLEAddress, psm: UInt16) -> sockaddr_l2 {
        var a = sockaddr_l2()
        a.l2_family = sa_family_t(AF_BLUETOOTH)
        a.l2_psm = psm.littleEndian
        let le = address.littleEndian
        a.l2_bdaddr.b = (le[0], le[1], le[2], le[3], le[4], le[5])
        a.l2_bdaddr_type = address.kind.rawValue
        return a
    }

    static func listen(_ fd: Int32, backlog: Int32 = 8) throws {
        if let failure = Socket.listen(fd, backlog: backlog) {
            throw BLEUnavailable.from(errno: failure.code, doing: "listen on L2CAP")
        }
    }

    typealias AcceptResult = Socket.AcceptResult<BLEAddress>

    /// accept(2), non-blocking and close-on-exec, with the peer's LE address.
    static func accept(_ listener: Int32) -> AcceptResult {
        switch Socket.accept(listener, as: sockaddr_l2()) {
        case .accepted(let fd, let raw):
            let b = raw.l2_bdaddr.b
            let kind = BLEAddress.Kind(rawValue: raw.l2_bdaddr_type) ?? .lePublic
            return .accepted(fd: fd, remote: BLEAddress(littleEndian: [b.0, b.1, b.2, b.3, b.4, b.5][...], kind: kind))
        case .none:
            return .none
        case .failed(let failure):
            return .failed(failure)
        }
    }

    /// Starts a non-blocking connect(2) to `remote` on `psm`: 0 (connecting or connected)
    /// or errno.
    static func startConnect(_ fd: Int32, to remote: BLEAddress, psm: UInt16) -> Int32 {
        Socket.connect(fd, sockaddr(remote, psm: psm))?.code ?? 0
    }

    /// BT_SNDMTU / BT_RCVMTU: the SDU sizes negotiated on a connected channel.
    static func mtu(_ fd: Int32, send: Bool) -> Int? {
        Socket.option(fd, SOL_BLUETOOTH, send ? BT_SNDMTU : BT_RCVMTU, as: UInt16(0)).map(Int.init)
    }

    /// The most SDUs one `send(_:sdus:)` passes.
    static let maxBatch = 64

    enum SendResult: Equatable {
        /// The first `count` SDUs went, each whole.
        case sent(count: Int)
        /// None went: no credits or no room (EAGAIN).
        case wouldBlock
        case failed(Int32)
    }

    /// sendmmsg(2) of up to `maxBatch` SDUs in one system call, each its own message (an
    /// SDU goes whole or not at all), with MSG_NOSIGNAL and MSG_DONTWAIT: a channel's queued
    /// SDUs leave together instead of one send(2) each. The kernel stops at the first it
    /// cannot take; the rest wait for writability. EINTR is retried; errno is read right
    /// after the call.
    static func send(_ fd: Int32, sdus: ArraySlice<[UInt8]>) -> SendResult {
        let batch = sdus.prefix(maxBatch)
        return withBuffers(batch, []) { buffers in
            var vectors = buffers.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
            return vectors.withUnsafeMutableBufferPointer { v -> SendResult in
                guard let first = v.baseAddress else { return .wouldBlock }
                var messages = (0..<v.count).map { i in
                    yaok_mmsghdr(msg_hdr: yaok_msghdr(msg_name: nil, msg_namelen: 0, msg_iov: UnsafeMutableRawPointer(first + i),
                                                      msg_iovlen: 1, msg_control: nil, msg_controllen: 0, msg_flags: 0),
                                 msg_len: 0)
                }
                while true {
                    let n = Int(yaok_sendmmsg(fd, &messages, UInt32(messages.count), Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)))
                    if n > 0 {
                        // A packet socket takes a message whole; a part would be a broken SDU.
                        guard (0..<n).allSatisfy({ Int(messages[$0].msg_len) == buffers[$0].count }) else { return .failed(EMSGSIZE) }
                        return .sent(count: n)
                    }
                    if n == 0 { return .wouldBlock }
                    let failure = Errno(errno)
                    if failure.code == EINTR { continue }
                    return failure.isWouldBlock ? .wouldBlock : .failed(failure.code)
                }
            }
        }
    }

    /// `body` with the bytes of every SDU (nested `withUnsafeBytes`, one level per SDU: at
    /// most `maxBatch`), so that the pointers stay valid through the system call.
    private static func withBuffers<R>(_ sdus: ArraySlice<[UInt8]>, _ taken: [UnsafeRawBufferPointer],
                                       _ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        guard let first = sdus.first else { return body(taken) }
        return first.withUnsafeBytes { withBuffers(sdus.dropFirst(), taken + [$0], body) }
    }
}
