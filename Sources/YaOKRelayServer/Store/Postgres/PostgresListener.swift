import Glibc
import YaOKSupport
import YaOKWire

/// Live push across relay processes: one dedicated connection per relay, on its own
/// thread, that LISTENs on `yaok_relay_mailbox` (payload: the IDs in hex, comma-separated,
/// of the mailboxes a commit stored into, sent once per commit by `PostgresRelayStore`)
/// and `yaok_relay_revoked`. Notifications from this relay's own
/// pool connections are dropped (the relay already knows what it stored).
///
/// The connection has TCP keepalives and is pinged (`SELECT 1`) every 10 s when idle.
/// When the connection drops or stops answering it reconnects with backoff (0.1 s doubling to 5 s) and then
/// reports `.resync`: notifications sent while it was away are lost, so every subscribed
/// mailbox is read again.
final class PostgresListener: RelayStoreWatch, @unchecked Sendable {
    static let mailboxChannel = "yaok_relay_mailbox"
    static let revokedChannel = "yaok_relay_revoked"

    private let conninfo: String
    private let ownPIDs: @Sendable () -> Set<Int32>
    private let onChange: @Sendable (RelayStoreChange) -> Void
    private let stopping = Locked(false)
    private var thread: pthread_t?

    init(conninfo: String, ownPIDs: @escaping @Sendable () -> Set<Int32>,
         onChange: @escaping @Sendable (RelayStoreChange) -> Void) {
        self.conninfo = conninfo
        self.ownPIDs = ownPIDs
        self.onChange = onChange
    }

    func start() throws {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            guard let raw else { return nil }
            Unmanaged<PostgresListener>.fromOpaque(raw).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<PostgresListener>.fromOpaque(context).release()
            throw YaOKError(.internal, "Cannot start the relay's LISTEN thread (pthread_create: \(rc))")
        }
        self.thread = thread
    }

    func stop() {
        let first = stopping.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        if first, let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private var isStopping: Bool { stopping.withLock { $0 } }

    private func run() {
        var backoffMs: Int32 = 100
        while !isStopping {
            let connection: PostgresConnection
            do {
                connection = try PostgresConnection(conninfo: conninfo)
                try connection.execute("LISTEN \(Self.mailboxChannel); LISTEN \(Self.revokedChannel)")
            } catch {
                // Wait out the backoff in short naps, so that stop() is not held up.
                var waited: Int32 = 0
                while waited < backoffMs && !isStopping {
                    usleep(50_000)
                    waited += 50
                }
                backoffMs = min(backoffMs * 2, 5000)
                continue
            }
            backoffMs = 100
            onChange(.resync)
            listen(on: connection)
        }
    }

    /// How often the idle connection is asked `SELECT 1`: a connection that died silently
    /// (no FIN, a frozen server) would otherwise wait for notifications forever.
    static let pingSeconds = 10.0

    /// Serves one connection until it fails or the watch stops.
    private func listen(on connection: PostgresConnection) {
        var poller = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
        var nextPing = PostgresPool.now() + UInt64(Self.pingSeconds * 1e9)
        while !isStopping {
            let ready = poll(&poller, 1, 200)
            if ready < 0 && errno != EINTR { return }
            if PostgresPool.now() >= nextPing {
                // Fails within the statement deadline: back to run(), reconnect and resync.
                // Notifications read meanwhile wait in libpq, taken just below.
                guard (try? connection.execute("SELECT 1")) != nil else { return }
                nextPing = PostgresPool.now() + UInt64(Self.pingSeconds * 1e9)
            } else if ready <= 0 {
                continue
            }
            let notes: [(channel: String, payload: String, pid: Int32)]
            do {
                notes = try connection.notifications()
            } catch {
                return
            }
            guard !notes.isEmpty else { continue }
            let own = ownPIDs()
            var mailboxes: [MailboxID] = []
            var seen = Set<MailboxID>()
            var revoked = false
            for note in notes {
                if note.channel == Self.revokedChannel {
                    revoked = true
                } else if !own.contains(note.pid) {
                    // One commit's mailboxes, comma-separated (one ID alone from a relay
                    // before schema 8); a part that is not a mailbox ID is skipped.
                    for part in note.payload.split(separator: ",") {
                        guard let bytes = Hex.decode(String(part)), let mailbox = try? MailboxID(bytes: bytes),
                              seen.insert(mailbox).inserted else { continue }
                        mailboxes.append(mailbox)
                    }
                }
            }
            if !mailboxes.isEmpty { onChange(.stored(mailboxes)) }
            if revoked { onChange(.revoked) }
        }
    }
}
