import Glibc
import Foundation
import YaOK

/// The raw limits the LAN figures are printed beside, measured in the same run: loopback
/// TCP (TCP_NODELAY, as the LAN transport sets) carrying the frames one message costs, with
/// no node, no crypto and no disk. A message goes out as a 240-byte frame (its length prefix
/// included) and comes back as 213 bytes (the link receipt and the end-to-end ack): the
/// sizes `strace` shows on a LAN link at 100-byte texts.
enum LoopbackLimits {
    static let requestBytes = 240
    static let replyBytes = 213

    /// Round trips one at a time: send a request, wait for the whole reply. Seconds each.
    static func roundTrips(_ count: Int) throws -> [Double] {
        try withEchoPeer { fd in
            var request = [UInt8](repeating: 1, count: requestBytes)
            var reply = [UInt8](repeating: 0, count: replyBytes)
            var out: [Double] = []
            out.reserveCapacity(count)
            for _ in 0..<count {
                let start = Measure.now()
                try writeAll(fd, &request)
                try readAll(fd, &reply)
                out.append(Measure.now() - start)
            }
            return out
        }
    }

    /// `count` requests written back to back (one send(2) each, from a thread of their own)
    /// while the replies are read: requests per second until the last reply is in.
    static func pipelined(_ count: Int) throws -> Double {
        try withEchoPeer { fd in
            let start = Measure.now()
            let writer = Thread {
                var request = [UInt8](repeating: 1, count: requestBytes)
                for _ in 0..<count { if (try? writeAll(fd, &request)) == nil { return } }
            }
            writer.start()
            var reply = [UInt8](repeating: 0, count: replyBytes * 64)
            var left = count * replyBytes
            while left > 0 {
                let n = reply.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, left), 0) }
                guard n > 0 else { throw YaOKError(.internal, "loopback reply stream ended") }
                left -= n
            }
            return Double(count) / (Measure.now() - start)
        }
    }

    /// A listener on 127.0.0.1 and a thread that answers every whole request it reads with
    /// one reply (the replies for one read leave in one write, as the node's flush does).
    /// `body` gets the connected client socket.
    private static func withEchoPeer<R>(_ body: (Int32) throws -> R) throws -> R {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw YaOKError(.internal, "socket failed") }
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw YaOKError(.internal, "bind/listen failed") }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let server = Thread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            noDelay(fd)
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            var pending = 0
            let replies = [UInt8](repeating: 2, count: replyBytes * (buffer.count / requestBytes + 1))
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return }
                pending += n
                let whole = pending / requestBytes
                pending -= whole * requestBytes
                guard whole > 0 else { continue }
                var chunk = Array(replies[0..<(whole * replyBytes)])
                if (try? writeAll(fd, &chunk)) == nil { return }
            }
        }
        server.start()
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard client >= 0 else { throw YaOKError(.internal, "socket failed") }
        defer { close(client) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw YaOKError(.internal, "connect failed") }
        noDelay(client)
        defer { shutdown(client, Int32(SHUT_RDWR)) }
        return try body(client)
    }

    private static func noDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func writeAll(_ fd: Int32, _ bytes: inout [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return send(fd, base + done, raw.count - done, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { throw YaOKError(.internal, "loopback send failed") }
            done += n
        }
    }

    private static func readAll(_ fd: Int32, _ bytes: inout [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return recv(fd, base + done, raw.count - done, 0)
            }
            guard n > 0 else { throw YaOKError(.internal, "loopback receive failed") }
            done += n
        }
    }
}
