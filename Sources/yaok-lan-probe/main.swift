// yaok-lan-probe: one Ya OK node on the LAN transport, for scripts/test-lan-netns (until
// `yaok run --lan` exists). It sets up a fresh node (cheap test-only PIN hashing), swaps
// contact cards with its peer through two files, turns on the LAN transport with multicast
// discovery, sends one message of `--send-bytes` once the peer is online, waits for one of
// `--expect-bytes` and for its own to be acknowledged, then exits 0. One JSON object per
// line on stdout says what happened and when (wall-clock ms, so that two probes on one
// machine can be compared):
//
//   {"event":"listening","port":40123}
//   {"event":"discovered","address":"10.99.0.2:40999","after_ms":812}
//   {"event":"online","after_ms":815}
//   {"event":"sent","bytes":5120,"at_ms":1800000000000}
//   {"event":"received","bytes":5120,"at_ms":1800000000012}
//   {"event":"delivered","at_ms":1800000000020}
//   {"event":"done"}            or   {"event":"error","message":"…"} and exit 1
import Foundation
import YaOK

struct Arguments {
    var data = ""
    var name = "Probe"
    var cardOut = ""
    var peerCard = ""
    var listen = "0.0.0.0"
    var port: UInt16 = 0
    var group = "239.255.42.99"
    var discoveryPort: UInt16 = 47474
    var interface: String?
    var beaconInterval = 3.0
    var staticPeers: [String] = []
    var noDiscovery = false
    var sendBytes = 0
    var expectBytes = 0
    var timeout = 30.0
    var startDelay = 0.0

    static let usage = """
        usage: yaok-lan-probe --data DIR --card-out FILE --peer-card FILE [--name NAME]
               [--listen ADDR] [--port N] [--group ADDR] [--discovery-port N] [--interface IF]
               [--beacon-interval S] [--peer HOST:PORT]... [--no-discovery]
               [--send-bytes N] [--expect-bytes N] [--timeout S] [--start-delay S]
        """

    init(_ args: [String]) throws {
        var i = 0
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw ProbeError("\(args[i - 1]) needs a value\n\(Arguments.usage)") }
            return args[i]
        }
        func number<T: LosslessStringConvertible>(_ type: T.Type) throws -> T {
            let text = try value()
            guard let n = T(text) else { throw ProbeError("\(args[i - 1]): not a number: \(text)") }
            return n
        }
        while i < args.count {
            switch args[i] {
            case "--data": data = try value()
            case "--name": name = try value()
            case "--card-out": cardOut = try value()
            case "--peer-card": peerCard = try value()
            case "--listen": listen = try value()
            case "--port": port = try number(UInt16.self)
            case "--group": group = try value()
            case "--discovery-port": discoveryPort = try number(UInt16.self)
            case "--interface": interface = try value()
            case "--beacon-interval": beaconInterval = try number(Double.self)
            case "--peer": staticPeers.append(try value())
            case "--no-discovery": noDiscovery = true
            case "--send-bytes": sendBytes = try number(Int.self)
            case "--expect-bytes": expectBytes = try number(Int.self)
            case "--timeout": timeout = try number(Double.self)
            case "--start-delay": startDelay = try number(Double.self)
            case "-h", "--help": throw ProbeError(Arguments.usage)
            default: throw ProbeError("unknown argument \(args[i])\n\(Arguments.usage)")
            }
            i += 1
        }
        guard !data.isEmpty, !cardOut.isEmpty, !peerCard.isEmpty else { throw ProbeError(Arguments.usage) }
    }
}

struct ProbeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func emit(_ fields: [(String, JSON)]) {
    print(JSON.object(fields).serialized)
    fflush(nil)  // every stream: a pipe would otherwise hold lines back
}

func wallMs() -> Int64 { Clock.milliseconds() }

func run(_ a: Arguments) throws {
    let deadline = Date().addingTimeInterval(a.timeout)
    @discardableResult
    func waitFor<T>(_ what: String, _ probe: () throws -> T?) throws -> T {
        while true {
            if let value = try probe() { return value }
            guard Date() < deadline else { throw ProbeError("timed out waiting for \(what)") }
            usleep(5_000)
        }
    }

    var options = Node.Options()
    // A test tool: the PIN protects nothing here, so the cheapest costs and their opt-in.
    options.pinHashing = .insecureFastForTestsOnly
    options.allowTestOnlyKDFCosts = true
    let node = try Node(dataDirectory: a.data, options: options)
    defer { node.close() }
    _ = try node.setup(name: a.name, pin: "246810", confirmation: "246810")
    let card = try node.profile().text
    try card.write(toFile: a.cardOut + ".tmp", atomically: false, encoding: .utf8)
    _ = rename(a.cardOut + ".tmp", a.cardOut)
    let peerCard = try waitFor("the peer's card") {
        try? String(contentsOfFile: a.peerCard, encoding: .utf8)
    }
    let peer = try node.addContact(card: peerCard.trimmingCharacters(in: .whitespacesAndNewlines)).id

    var lanOptions = LANTransport.Options()
    lanOptions.listenAddress = a.listen
    lanOptions.listenPort = a.port
    lanOptions.staticPeers = a.staticPeers
    if a.noDiscovery {
        lanOptions.discovery = nil
    } else {
        var discovery = LANTransport.Options.Discovery()
        discovery.group = a.group
        discovery.port = a.discoveryPort
        discovery.interface = a.interface
        discovery.beaconInterval = a.beaconInterval
        lanOptions.discovery = discovery
    }
    let lan = try LANTransport(options: lanOptions)
    try node.addTransport(lan)
    // A late joiner: the peer's transport has been running (and beaconing) for a while.
    if a.startDelay > 0 { usleep(UInt32(min(a.startDelay, 60) * 1_000_000)) }
    let started = Date()
    try node.setTransport("lan", enabled: true)
    emit([("event", .string("listening")), ("port", .int(Int64(lan.listeningPort ?? 0)))])
    func afterMs() -> JSON { .int(Int64(Date().timeIntervalSince(started) * 1000)) }

    if !a.noDiscovery {
        let address = try waitFor("a beacon from the peer") { () -> String? in
            guard case .object(let fields) = lan.diagnostics(),
                  case .array(let peers)? = fields.first(where: { $0.0 == "peers" })?.1,
                  case .object(let first)? = peers.first,
                  case .string(let address)? = first.first(where: { $0.0 == "address" })?.1 else { return nil }
            return address
        }
        emit([("event", .string("discovered")), ("address", .string(address)), ("after_ms", afterMs())])
    }
    try waitFor("the peer to be online") { () -> Bool? in
        if case .online = try node.contact(peer).connection { return true }
        return nil
    }
    emit([("event", .string("online")), ("after_ms", afterMs())])

    var sent: Message?
    if a.sendBytes > 0 {
        let text = String((0..<a.sendBytes).map { i in Character(Unicode.Scalar(UInt8(0x61 + i % 26))) })
        let at = wallMs()
        sent = try node.send(to: peer, text: text)
        emit([("event", .string("sent")), ("bytes", .int(Int64(a.sendBytes))), ("at_ms", .int(at))])
    }
    var received = a.expectBytes == 0
    var delivered = sent == nil
    try waitFor("the message to arrive and ours to be acknowledged") { () -> Bool? in
        if !received, let m = try node.history(peer, limit: 10).messages.first(where: { $0.direction == .incoming }) {
            received = true
            emit([("event", .string("received")), ("bytes", .int(Int64(m.text.utf8.count))), ("at_ms", .int(wallMs()))])
        }
        if !delivered, let sent, try node.outgoingMessage(sent.messageID).status == .delivered {
            delivered = true
            emit([("event", .string("delivered")), ("at_ms", .int(wallMs()))])
        }
        return received && delivered ? true : nil
    }
    // Linger, so that the acknowledgement and receipts for the peer's message go out.
    usleep(1_000_000)
    emit([("event", .string("done"))])
}

do {
    try run(try Arguments(Array(CommandLine.arguments.dropFirst())))
} catch {
    emit([("event", .string("error")), ("message", .string("\(error)"))])
    exit(1)
}
