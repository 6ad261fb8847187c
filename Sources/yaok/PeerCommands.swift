import ArgumentParser
import Foundation
import Glibc
import YaOK

/// Sends a request to the `yaok run` serving this home, or, when there is none, opens the
/// node and runs it here. Either way the output is the same.
enum PeerClient {
    static func execute(_ request: PeerRequest, _ options: GlobalOptions) throws {
        try Output.run(json: options.json) {
            let result = try answer(request, options)
            Output.emit(result, asJSON: options.json) { request.render(result) }
        }
    }

    static func answer(_ request: PeerRequest, _ options: GlobalOptions) throws -> JSON {
        let client = ControlClient(path: ControlSocket.path(home: options.dataDirectory))
        if let result = try ask(client, request) { return result }
        let node: Node
        do {
            node = try options.openNode()
        } catch let error as YaOKError where error.code == GlobalOptions.busyCode {
            // Held by a `yaok run` that has not opened its control socket yet (it is
            // reading the PIN or unlocking): wait for it a little.
            for _ in 0..<30 {
                usleep(100_000)
                if let result = try ask(client, request) { return result }
            }
            throw error
        }
        defer { node.close() }
        if request.needsKeys {
            try options.unlock(node)
        } else if case .status = request {
            try unlockForStatus(node, options)
        }
        return try request.perform(on: node)
    }

    /// `status` works locked, but with $YAOK_PIN set the person has given the PIN: unlock, so
    /// that the contacts and the outbox show too. Not during a lockout (that attempt would
    /// only be refused); a PIN that does not unlock leaves the status locked, with a note.
    private static func unlockForStatus(_ node: Node, _ options: GlobalOptions) throws {
        guard ProcessInfo.processInfo.environment["YAOK_PIN"] != nil else { return }
        let status = try node.status()
        guard status.initialized, status.locked, status.lockoutSecondsRemaining == 0 else { return }
        do {
            try options.unlock(node)
        } catch let error as YaOKError {
            FileHandle.standardError.write(Data("yaok: YAOK_PIN did not unlock: \(error.message)\n".utf8))
        }
    }

    /// The answer of the `yaok run` on `client`'s socket; nil when none is serving. When
    /// that node is locked (auto-lock), reads the PIN here and asks again with it.
    private static func ask(_ client: ControlClient, _ request: PeerRequest) throws -> JSON? {
        guard var result = try client.exchange(request.json()) else { return nil }
        if request.needsKeys, result["status"]?.int == Int64(YaOKError.Code.locked.rawValue) {
            let pin = try PINInput.pin(prompt: "PIN: ")
            guard let again = try client.exchange(request.json(pin: pin)) else { return nil }
            result = again
        }
        return try checked(result)
    }

    /// `result`, unless it is an error response: then that error, thrown.
    static func checked(_ result: JSON) throws -> JSON {
        if let message = result["error"]?.string {
            if let raw = result["status"]?.int, let code = YaOKError.Code(rawValue: Int32(truncatingIfNeeded: raw)) {
                throw YaOKError(code, message)
            }
            throw CLIError(message)
        }
        return result
    }
}

/// `yaok send CONTACT TEXT` (US-020).
struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a message; it goes out now, or when a transport reaches the contact.",
        discussion: "Through the running `yaok run` for this home when there is one.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String
    @Argument(help: "The message, up to 10 KB.") var text: String

    func run() throws { try PeerClient.execute(.send(contact: contact, text: text), options) }
}

/// `yaok history CONTACT` (US-023).
struct History: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show a conversation, oldest first, with each message's status.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "ID, name, user ID or fingerprint prefix (or the ID of a deleted contact).") var contact: String
    @Option(help: "How many of the newest messages to show (1 to 1000).") var limit = 50

    func validate() throws {
        guard PeerRequest.historyLimits.contains(limit) else { throw ValidationError("--limit must be 1 to 1000") }
    }

    func run() throws { try PeerClient.execute(.history(contact: contact, limit: limit), options) }
}

/// `yaok retry MESSAGE_ID`.
struct Retry: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Try a failed or pending message again now.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The message ID, 32 hex characters (from `send`, `history` or `outbox`).") var messageID: String

    func run() throws { try PeerClient.execute(.retry(messageID: messageID), options) }
}

/// `yaok outbox`.
struct Outbox: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List messages not sent yet: pending and failed.")
    @OptionGroup var options: GlobalOptions

    func run() throws { try PeerClient.execute(.outbox, options) }
}

/// `yaok transport NAME on|off`: starts or stops a transport of the running `yaok run`.
struct TransportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transport",
        abstract: "Turn a transport of the running peer on or off (e.g. `transport lan off`).",
        discussion: "Transports run inside `yaok run`; this reaches it over the control socket.")
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The transport: lan or ble.") var name: String
    @Argument(help: "on or off.") var state: String

    func validate() throws {
        guard ["on", "off"].contains(state) else { throw ValidationError("The state is on or off") }
    }

    func run() throws { try PeerClient.execute(.transport(name: name, enabled: state == "on"), options) }
}
