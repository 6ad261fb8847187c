// yaok-soak: one peer of the reliability test (scripts/test-reliability): a node on the LAN
// transport (loopback, a static peer, no discovery) that sends `--send` numbered messages
// to its one contact, one at a time, and expects `--expect` from it. It runs until it is
// stopped (the test stops both peers once both report done). It may be killed with
// SIGKILL at any moment and started again on the same data directory: it resumes from what
// its store says (how many it has sent), never from memory, so a restart neither loses nor
// repeats a message. One JSON object per line on stdout:
//
//   {"event":"progress","sent":120,"delivered":97,"received":88}
//   {"event":"done","sent":1000,"delivered":1000,"received":1000}   (repeated while it runs)
//
// `--check` prints the final tally instead and exits: every text, how often it arrived,
// and every outgoing status ({"event":"check","sent":…,"delivered":…,"received":…,
// "received_unique":…,"missing":[…],"duplicates":[…]}).
import Foundation
import YaOK

struct Arguments {
    var data = ""
    var name = "Peer"
    var cardOut = ""
    var peerCard = ""
    var port: UInt16 = 0
    var peer = ""
    var send = 0
    var expect = 0
    var interval = 0.002
    var check = false

    init(_ args: [String]) throws {
        var i = 1
        func value() throws -> String {
            i += 1
            guard i < args.count else { throw YaOKError(.invalidArgument, "\(args[i - 1]) needs a value") }
            return args[i]
        }
        while i < args.count {
            switch args[i] {
            case "--data": data = try value()
            case "--name": name = try value()
            case "--card-out": cardOut = try value()
            case "--peer-card": peerCard = try value()
            case "--port": port = UInt16(try value()) ?? 0
            case "--peer": peer = try value()
            case "--send": send = Int(try value()) ?? 0
            case "--expect": expect = Int(try value()) ?? 0
            case "--interval": interval = Double(try value()) ?? 0.002
            case "--check": check = true
            default: throw YaOKError(.invalidArgument, "unknown argument \(args[i])")
            }
            i += 1
        }
        guard !data.isEmpty else { throw YaOKError(.invalidArgument, "--data is required") }
    }
}

func say(_ fields: [(String, JSON)]) {
    FileHandle.standardOutput.write(Data((JSON.object(fields).serialized + "\n").utf8))
}

/// Every message of the conversation, oldest first (paging through the history).
func allMessages(_ node: Node, _ contact: Int64) throws -> [Message] {
    var out: [Message] = []
    var cursor: String?
    repeat {
        let page = try node.history(contact, before: cursor, limit: 1000)
        out = page.messages + out
        cursor = page.olderCursor
    } while cursor != nil
    return out
}

func tally(_ node: Node, _ contact: Int64) throws -> (sent: Int, delivered: Int, received: [String]) {
    let messages = try allMessages(node, contact)
    let outgoing = messages.filter { $0.direction == .outgoing }
    return (outgoing.count, outgoing.filter { $0.status == .delivered }.count,
            messages.filter { $0.direction == .incoming }.map(\.text))
}

let pin = "246810"
do {
    let args = try Arguments(CommandLine.arguments)
    var options = Node.Options()
    options.pinHashing = .insecureFastForTestsOnly  // what is tested is delivery, not the KDF
    options.allowTestOnlyKDFCosts = true
    let node = try Node(dataDirectory: args.data, options: options)
    defer { node.close() }
    if try node.status().initialized {
        try node.unlock(pin: pin)
    } else {
        _ = try node.setup(name: args.name, pin: pin, confirmation: pin)
    }
    try node.setAutoLock(.never)
    if !args.cardOut.isEmpty {
        try (try node.profile().text).write(toFile: args.cardOut, atomically: true, encoding: .utf8)
    }
    // The peer's card: wait for the other process to write it (first start only).
    var contact = try node.contacts().first?.id
    while contact == nil {
        if let card = try? String(contentsOfFile: args.peerCard, encoding: .utf8), !card.isEmpty {
            contact = try node.addContact(card: card.trimmingCharacters(in: .whitespacesAndNewlines)).id
        } else {
            usleep(20_000)
        }
    }
    guard let contact else { exit(1) }
    if args.check {
        let t = try tally(node, contact)
        var counts: [String: Int] = [:]
        for text in t.received { counts[text, default: 0] += 1 }
        let expected = (0..<args.expect).map { "message \($0)" }
        say([("event", .string("check")), ("sent", .int(Int64(t.sent))), ("delivered", .int(Int64(t.delivered))),
             ("received", .int(Int64(t.received.count))), ("received_unique", .int(Int64(counts.count))),
             ("missing", .array(expected.filter { counts[$0] == nil }.prefix(20).map { .string($0) })),
             ("duplicates", .array(counts.filter { $0.value > 1 }.keys.sorted().prefix(20).map { .string($0) }))])
        exit(0)
    }

    var lanOptions = LANTransport.Options()
    lanOptions.listenAddress = "127.0.0.1"
    lanOptions.listenPort = args.port
    lanOptions.discovery = nil
    lanOptions.staticPeers = args.peer.isEmpty ? [] : [args.peer]
    lanOptions.reconnectDelay = 0.05
    lanOptions.maxReconnectDelay = 0.5
    let lan = try LANTransport(options: lanOptions)
    try node.addTransport(lan)
    try node.setTransport("lan", enabled: true)

    // Resume from the store: the texts are numbered, and the store knows how many went.
    var sent = try tally(node, contact).sent
    var lastReport = 0.0
    while true {
        if sent < args.send {
            try node.send(to: contact, text: "message \(sent)")
            sent += 1
            if args.interval > 0 { usleep(UInt32(args.interval * 1_000_000)) }
        } else {
            usleep(20_000)
        }
        let now = Date().timeIntervalSince1970
        guard now - lastReport > 0.25 || sent == args.send else { continue }
        lastReport = now
        let t = try tally(node, contact)
        let fields: [(String, JSON)] = [("sent", .int(Int64(t.sent))), ("delivered", .int(Int64(t.delivered))),
                                        ("received", .int(Int64(t.received.count)))]
        // Done is reported, but the peer keeps running (the peer may still need its acks):
        // the test stops both once both are done.
        let done = t.sent >= args.send && t.delivered >= args.send && t.received.count >= args.expect
        say([("event", .string(done ? "done" : "progress"))] + fields)
    }
} catch {
    say([("event", .string("error")), ("message", .string("\(error)"))])
    exit(1)
}
