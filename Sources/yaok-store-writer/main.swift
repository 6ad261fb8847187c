// yaok-store-writer DIR PIN: a child process for the store's crash test. It unlocks the
// node in DIR (set up by the test with the test-only fast PIN hashing), then stores
// outgoing messages "message N" to contact 1 for ever, printing N on stdout after each
// one is committed. The test kills it with SIGKILL mid-write and checks that every
// printed N is in the database.
//
// yaok-store-writer unlock DIR PIN: opens the node in DIR, prints "ready", then tries to
// unlock with PIN (the vault's own Argon2id costs). The test kills it while Argon2id runs
// and checks that the attempt was already counted.
//
// yaok-store-writer carry DIR NOW_MS: opens the store in DIR without any key (as a locked
// node does) and takes carried packets for ever, printing each one's identity (hex) after
// its take committed. The test kills it with SIGKILL and checks every printed packet is held.
//
// yaok-store-writer slab REGIONS: makes forward-secrecy key pairs (their secrets in the
// slab SecretSlab.receiverKeys) until the slab holds REGIONS guarded regions, checks that
// every secret still gives its public key, and prints "regions R lock_failures F usable U"
// (U: the pairs whose secret was read back intact). The test runs it without CAP_IPC_LOCK
// and with a small RLIMIT_MEMLOCK, so that mlock fails past the limit.
import Glibc
import YaOK

/// Unbuffered write(2): each line reaches the test before the next write starts.
func say(_ text: String, fd: Int32 = 1) {
    var bytes = Array(text.utf8)
    _ = write(fd, &bytes, bytes.count)
}

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "unlock" {
    do {
        let node = try Node(dataDirectory: arguments[2])
        say("ready\n")
        try node.unlock(pin: arguments[3])
        say("unlocked\n")
    } catch {
        say("\(error)\n")
    }
    exit(0)
}
if arguments.count == 4, arguments[1] == "carry", let now = Int64(arguments[3]) {
    do {
        let store = try Store(directory: arguments[2])
        let depositor = try CarryDepositor(Array("writer".utf8))
        let policy = CarryPolicy(maxPackets: 1_000_000, maxBytes: 1 << 40, depositorPacketsPerHour: 1_000_000,
                                 depositorBytesPerHour: 1 << 40)
        let expiry = try CarriedPacket.expiryHour(createdMs: now, lifetimeMs: 86_400_000)
        while true {
            // The payload is opaque to a carrier: random bytes stand for a sealed envelope.
            let packet = try CarriedPacket(hopLimit: 8, copyBudget: 8, expiryHour: expiry,
                                           routingTag: RoutingTag(value: UInt64.random(in: .min ... .max)),
                                           claimHash: PurgeClaim.hash(PurgeClaim.random()),
                                           payload: Sodium.randomBytes(Int.random(in: 128...4096)))
            guard case .taken(let entry, _) = try store.takeCarried(packet.encode(), from: depositor, nowMs: now,
                                                                     policy: policy) else {
                say("yaok-store-writer: a fresh packet was not taken\n", fd: 2)
                exit(1)
            }
            say(Hex.encode(entry.id) + "\n")
        }
    } catch {
        say("yaok-store-writer: \(error)\n", fd: 2)
        exit(1)
    }
}
if arguments.count == 3, arguments[1] == "slab", let regions = Int(arguments[2]) {
    do {
        var pairs: [ReceiverKeyPair] = []
        while SecretSlab.receiverKeys.regionCount < regions {
            pairs.append(try ReceiverKeyPair.generate(id: UInt32(pairs.count + 1)))
        }
        // Usable: each secret, read from its slot, gives the public key made when it was new.
        let usable = try pairs.filter { try ReceiverKeyPair(id: $0.key.id, secret: $0.secret).key == $0.key }.count
        say("regions \(SecretSlab.receiverKeys.regionCount) lock_failures \(SecureMemory.lockFailures) usable \(usable) of \(pairs.count)\n")
    } catch {
        say("yaok-store-writer: \(error)\n", fd: 2)
        exit(1)
    }
    exit(0)
}
guard arguments.count == 3 else {
    say("usage: yaok-store-writer DIR PIN\n", fd: 2)
    exit(2)
}
var options = Node.Options()
options.pinHashing = .insecureFastForTestsOnly
options.allowTestOnlyKDFCosts = true
do {
    let node = try Node(dataDirectory: arguments[1], options: options)
    try node.unlock(pin: arguments[2])
    var n = 0
    while true {
        n += 1
        _ = try node.send(to: 1, text: "message \(n)")
        say("\(n)\n")
    }
} catch {
    say("yaok-store-writer: \(error)\n", fd: 2)
    exit(1)
}
