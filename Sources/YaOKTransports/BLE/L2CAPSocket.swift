import Glibc
import CBluetooth
import YaOKSupport

/// L2CAP LE credit-based channels (CoC) through the kernel's sockets:
/// `socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)` bound to an LE address and a PSM.
/// Each send is one SDU, each receive one SDU: the channel keeps unit boundaries, so the
/// BLE transport needs no stream framing. Descriptors are non-blocking and close-on-exec.
enum L2CAPSocket {
    /// socket(2) + bind(2) to the adapter's address and `psm` (0: the kernel picks none,
    /// for outgoing channels) + BT_RCVMTU (which must follow bind: bind makes it LE CoC).
    static func open(adapter: BLEAddress, psm: UInt16, receiveMTU: Int, sendBuffer: Int) throws -> Int32 {
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        BTPROTO_L2CAP)
        guard fd >= 0 else { throw BLEUnavailable.from(errno: errno, doing: "socket(BTPROTO_L2CAP)") }
        var ok = false
        defer { if !ok { _ = Glibc.close(fd) } }
        var address = sockaddr(adapter, psm: psm)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            throw bindFailure(code, psm: psm, adapter: adapter)
        }
        var mtu = UInt16(clamping: receiveMTU)
        guard setsockopt(fd, SOL_BLUETOOTH, BT_RCVMTU, &mtu, socklen_t(MemoryLayout<UInt16>.size)) == 0 else {
            throw BLEUnavailable.from(errno: errno, doing: "setting the L2CAP receive MTU")
        }
        // The kernel allocates all of an SDU's PDUs before queueing any, charged to the send
        // buffer: with the default buffer large SDUs never go. SO_SNDBUFFORCE needs
        // CAP_NET_ADMIN (which mgmt needs anyway); SO_SNDBUF is the fallback.
        var size = Int32(clamping: sendBuffer)
        if setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, 4) != 0 {
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, 4)
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
        guard Glibc.listen(fd, backlog) == 0 else { throw BLEUnavailable.from(errno: errno, doing: "listen on L2CAP") }
    }

    enum AcceptResult {
        case accepted(fd: Int32, remote: BLEAddress)
        case none
        case failed(Int32)
    }

    /// accept(2), then O_NONBLOCK and FD_CLOEXEC.
    static func accept(_ listener: Int32) -> AcceptResult {
        var raw = sockaddr_l2()
        var length = socklen_t(MemoryLayout<sockaddr_l2>.size)
        while true {
            let fd = withUnsafeMutablePointer(to: &raw) {
                $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd >= 0 {
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
                    let code = errno
                    _ = Glibc.close(fd)
                    return .failed(code)
                }
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                let b = raw.l2_bdaddr.b
                let kind = BLEAddress.Kind(rawValue: raw.l2_bdaddr_type) ?? .lePublic
                return .accepted(fd: fd, remote: BLEAddress(littleEndian: [b.0, b.1, b.2, b.3, b.4, b.5][...], kind: kind))
            }
            let code = errno
            if code == EINTR { continue }
            return code == EAGAIN || code == EWOULDBLOCK ? .none : .failed(code)
        }
    }

    /// Starts a non-blocking connect(2) to `remote` on `psm`: 0 (connecting or connected)
    /// or errno.
    static func startConnect(_ fd: Int32, to remote: BLEAddress, psm: UInt16) -> Int32 {
        var address = sockaddr(remote, psm: psm)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: Glibc.sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
            }
        }
        if rc == 0 || errno == EINPROGRESS || errno == EINTR { return 0 }
        return errno
    }

    /// BT_SNDMTU / BT_RCVMTU: the SDU sizes negotiated on a connected channel.
    static func mtu(_ fd: Int32, send: Bool) -> Int? {
        var value: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        guard getsockopt(fd, SOL_BLUETOOTH, send ? BT_SNDMTU : BT_RCVMTU, &value, &length) == 0 else { return nil }
        return Int(value)
    }

    enum SendResult: Equatable { case sent, wouldBlock, failed(Int32) }

    /// send(2) of one SDU, whole or not at all.
    static func send(_ fd: Int32, _ sdu: [UInt8]) -> SendResult {
        while true {
            let n = sdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
            if n == sdu.count { return .sent }
            if n >= 0 { return .failed(EMSGSIZE) }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
            return .failed(code)
        }
    }
}
