// A Ya OK peer in Swift (`import YaOK`): the same program as examples/c/peer.c and
// examples/python/peer.py, with the same options, commands and output, so the three talk to
// each other. It is the executable target `yaok-peer-swift` of this package:
//
//   swift build --product yaok-peer-swift
//   YAOK_PIN=246810 $(swift build --show-bin-path)/yaok-peer-swift --data /tmp/carol --name Carol \
//       --relay 127.0.0.1:7443 --relay-pin <64 hex> --add alice.card
//
// A Swift app links the YaOK module (no C ABI, no second Swift runtime): Node, its event
// handler, RelayTransport and LANTransport. Lines typed on stdin are messages to the current
// contact; lines starting with "/" are commands (/help).
import Glibc
import YaOK

/// Output, one line at a time, from the main and the event thread; and the counts that
/// `/wait` waits for.
final class Console: Sendable {
    private let state = Locked((received: 0, delivered: 0))

    func say(_ line: String) {
        state.withLock { _ in writeLine(1, line) }
    }

    func count(received: Int = 0, delivered: Int = 0) {
        state.withLock { $0.received += received; $0.delivered += delivered }
    }

    func value(_ what: String) -> Int? {
        state.withLock { what == "received" ? $0.received : what == "delivered" ? $0.delivered : nil }
    }
}

let console = Console()

/// One line to a descriptor (1: stdout, 2: stderr), unbuffered, so that a program reading
/// the output through a pipe sees each line as it happens.
func writeLine(_ fd: Int32, _ line: String) {
    var text = line + "\n"
    text.withUTF8 { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n <= 0 { return }
            offset += n
        }
    }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    writeLine(2, "peer: \(message)")
    exit(status)
}

func shortID(_ id: MessageID) -> String { String(id.description.prefix(8)) }

/// The event handler: runs on the node's event thread.
func handle(_ event: NodeEvent, _ node: Node) {
    switch event {
    case .messageReceived(let contactID, let messageID):
        // The event never carries the text: find the message in the conversation.
        let message = (try? node.history(contactID, limit: 50))?.messages.first { $0.messageID == messageID }
        let name = (try? node.contact(contactID).name) ?? "someone"
        if let message { console.say("\(name) -> you: \(message.text)") }
        console.count(received: 1)
    case .messageStatusChanged(let m):
        console.say("\(shortID(m.messageID)): \(m.status.name)")
        if m.status == .delivered { console.count(delivered: 1) }
    case .transportChanged(let t):
        console.say("transport \(t.name): \(t.phase.rawValue)\(t.error.map { " (\($0))" } ?? "")")
    case .transportNotice(let n):
        console.say("transport \(n.transport): \(n.message)")
    case .locked(let reason):
        console.say("locked (\(reason))")
    default:
        break
    }
}

// ---- options ----

struct Options {
    var data: String?
    var name: String?
    var pin: String? = getenv("YAOK_PIN").flatMap { String(validatingCString: $0) }
    var add: String?
    var cardFile: String?
    var relay: String?
    var relayPin: String?
    var lan = false
    var lanListen = "0.0.0.0"
    var lanPort: UInt16 = 0
    var lanPeers: [String] = []
}

func usage() -> Never {
    writeLine(2, """
    usage: yaok-peer-swift --data DIR [--name NAME] [--pin PIN] [--add CARD|FILE] [--card-file FILE]
                           [--relay HOST:PORT --relay-pin HEX] [--lan] [--lan-listen ADDR] [--lan-port N]
                           [--lan-peer HOST:PORT]...
      --name is needed the first time (it creates the identity); the PIN comes from --pin or
      $YAOK_PIN. --card-file writes your card to FILE. Then type messages (/help).
    """)
    exit(2)
}

func parse(_ arguments: [String]) -> Options {
    var o = Options()
    var i = 1
    while i < arguments.count {
        let a = arguments[i]
        if a == "--lan" { o.lan = true; i += 1; continue }
        if a == "--help" || a == "-h" || i + 1 >= arguments.count { usage() }
        let v = arguments[i + 1]
        switch a {
        case "--data": o.data = v
        case "--name": o.name = v
        case "--pin": o.pin = v
        case "--add": o.add = v
        case "--card-file": o.cardFile = v
        case "--relay": o.relay = v
        case "--relay-pin": o.relayPin = v
        case "--lan-listen": o.lan = true; o.lanListen = v
        case "--lan-port": o.lan = true; o.lanPort = UInt16(v) ?? 0
        case "--lan-peer": o.lan = true; o.lanPeers.append(v)
        default: usage()
        }
        i += 2
    }
    // Say which is missing: the usage text alone left people guessing.
    if o.data == nil { writeLine(2, "yaok-peer-swift: --data DIR is required (where the identity and messages are kept)"); usage() }
    if o.pin == nil { writeLine(2, "yaok-peer-swift: no PIN: set YAOK_PIN (or give --pin)"); usage() }
    if o.relay != nil && o.relayPin == nil { writeLine(2, "yaok-peer-swift: --relay needs --relay-pin (the relay prints it)"); usage() }
    return o
}

/// Card text, or the name of a file holding it (its first line).
func cardArgument(_ value: String) -> String {
    if value.hasPrefix("yaok:") { return value }
    guard let f = fopen(value, "r") else { fail("\(value) is neither card text (yaok:2:…) nor a readable file") }
    defer { fclose(f) }
    var line: UnsafeMutablePointer<CChar>?
    var size = 0
    defer { free(line) }
    guard getline(&line, &size, f) > 0, let line, let text = String(validatingCString: line) else { fail("\(value) is empty") }
    return String(text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first ?? "")
}

/// The 32 bytes of a relay pin from its 64 hex digits.
func pinBytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.utf8)
    guard digits.count == 64 else { fail("--relay-pin takes the 64 hex digits yaok-relay prints as `pin:`", status: 2) }
    return stride(from: 0, to: 64, by: 2).map { i in
        guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else {
            fail("--relay-pin takes the 64 hex digits yaok-relay prints as `pin:`", status: 2)
        }
        return byte
    }
}

// ---- the peer ----

func addCard(_ node: Node, _ text: String) throws -> Contact {
    let contact: Contact
    do {
        contact = try node.addContact(card: text)
    } catch let error as YaOKError where error.code == .contactExists {
        let fingerprint = try ContactCard(text: text).fingerprint
        guard let existing = try node.contacts().first(where: { $0.fingerprint == fingerprint }) else { throw error }
        contact = existing
    }
    console.say("contact: \(contact.name) (fingerprint \(contact.fingerprint.grouped))")
    return contact
}

func send(_ node: Node, to current: Contact?, _ text: String) {
    guard let to = current else {
        console.say("no contact yet: add one with /add CARD (or --add)")
        return
    }
    do {
        let m = try node.send(to: to.id, text: text)
        console.say("you -> \(to.name): \(text) (\(shortID(m.messageID)): \(m.status.name))")
    } catch let error as YaOKError {
        console.say("not sent: \(error.message)")
    } catch {
        console.say("not sent: \(error)")
    }
}

func showTransports(_ node: Node) {
    let transports = node.transports()
    if transports.isEmpty { console.say("no transports: start with --relay or --lan") }
    for t in transports {
        let line = t.error ?? (t.phase == .running ? "Running" : "Disabled")
        console.say("transport \(t.name): \(t.phase.rawValue), \(t.links) link(s): \(line)")
    }
}

func wait(_ what: String, _ n: Int, _ seconds: Int) {
    guard console.value(what) != nil else {
        console.say("usage: /wait received|delivered N [SECONDS]")
        return
    }
    let deadline = Clock.milliseconds() + Int64(seconds) * 1000
    while let have = console.value(what), have < n {
        if Clock.milliseconds() > deadline {
            writeLine(2, "peer: timed out after \(seconds) s waiting for \(n) \(what) (have \(have))")
            exit(3)
        }
        usleep(20_000)
    }
}

let help = """
type a line to send it to the current contact; commands:
  /add CARD|FILE   add a contact from card text or a file holding it
  /to NAME         talk to another contact
  /card            print your card again
  /status          transports and their state
  /wait received N [S], /wait delivered N [S]   block until N (exit 3 after S s)
  /quit            stop (as does end of input)
"""

let options = parse(CommandLine.arguments)
do {
    var current: Contact?
    guard let data = options.data, let pin = options.pin else { usage() }
    let node = try Node(dataDirectory: data)
    // Register first: events that happen before a registration are dropped.
    node.setEventHandler { handle($0, node) }
    if try node.status().initialized {
        try node.unlock(pin: pin)
    } else {
        guard let name = options.name else { fail("\(data) has no identity yet: give --name to create one", status: 2) }
        _ = try node.setup(name: name, pin: pin, confirmation: pin)
    }
    _ = try node.setAutoLock(.never)

    let card = try node.profile()
    console.say("you are \(card.name); your card:")
    console.say("card: \(card.text)")
    if let path = options.cardFile {
        guard let f = fopen(path, "w") else { fail("cannot write \(path)") }
        fputs(card.text + "\n", f)
        fclose(f)
    }

    if let add = options.add {
        current = try addCard(node, cardArgument(add))
    } else if let only = try node.contacts().first, try node.contacts().count == 1 {
        current = only
    }

    if let relay = options.relay, let relayPin = options.relayPin {
        try node.addTransport(try RelayTransport(address: RelayAddress(relay), pin: pinBytes(relayPin), caFile: nil))
        try node.setTransport("relay", enabled: true)
    }
    if options.lan {
        var lan = LANTransport.Options()
        lan.listenAddress = options.lanListen
        lan.listenPort = options.lanPort
        if !options.lanPeers.isEmpty {
            lan.discovery = nil
            lan.staticPeers = options.lanPeers
        }
        try node.addTransport(try LANTransport(options: lan))
        try node.setTransport("lan", enabled: true)
    }
    if options.relay == nil && !options.lan { console.say("no transport: messages wait until you restart with --relay or --lan") }
    if let to = current {
        console.say("talking to \(to.name): type a message and press Enter (/help for commands)")
    } else if let contacts = try? node.contacts(), !contacts.isEmpty {
        let names = contacts.map(\.name).joined(separator: ", ")
        console.say("choose who to talk to with /to NAME (\(names); /help for commands)")
    } else {
        console.say("add a contact with /add CARD (/help for commands)")
    }

    while let line = readLine() {
        if line.isEmpty { continue }
        let words = line.split(separator: " ").map(String.init)
        if !line.hasPrefix("/") {
            send(node, to: current, line)
        } else if line == "/quit" {
            break
        } else if line == "/help" {
            console.say(help)
        } else if line == "/status" {
            showTransports(node)
        } else if line.hasPrefix("/add ") {
            current = try addCard(node, cardArgument(String(line.dropFirst(5))))
        } else if line.hasPrefix("/to ") {
            let wanted = String(line.dropFirst(4)).lowercased()
            if let match = try node.contacts().first(where: { $0.name.lowercased() == wanted }) {
                current = match
                console.say("talking to \(match.name)")
            } else {
                console.say("no contact named \(wanted)")
            }
        } else if line == "/card" {
            console.say("card: \(try node.profile().text)")
        } else if words.first == "/wait", (3...4).contains(words.count), let n = Int(words[2]) {
            wait(words[1], n, words.count == 4 ? Int(words[3]) ?? 60 : 60)
        } else {
            console.say("unknown command \(line) (/help)")
        }
    }
    node.close()  // stops the transports and the event thread
    console.say("bye")
} catch let error as YaOKError {
    fail(error.message)
} catch {
    fail("\(error)")
}
