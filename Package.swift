// swift-tools-version:6.1
// Ya OK core: a Swift library exported through a stable C ABI (include/yaok.h).
import PackageDescription

/// The ABI major version: it is the SONAME suffix and YAOK_ABI_VERSION in the header.
let abiVersion = "1"

let package = Package(
    name: "YaOK",
    products: [
        // The C ABI library. SwiftPM names it libyaokffi.so (the CLI already holds the name
        // "yaok"); scripts/build-lib installs it as build/lib/libyaok.so.1 for embedders.
        .library(name: "yaokffi", type: .dynamic, targets: ["YaOKFFI"]),
        // The Swift API, for Swift apps (they link the module, not a second Swift runtime).
        .library(name: "YaOK", targets: ["YaOK"]),
        .executable(name: "yaok", targets: ["yaok"]),
        .executable(name: "yaok-bench", targets: ["yaok-bench"]),
        .executable(name: "yaok-relay", targets: ["yaok-relay"]),
        .executable(name: "yaok-relay-load", targets: ["yaok-relay-load"]),
        .executable(name: "yaok-peer-swift", targets: ["yaok-peer-swift"]),
        .executable(name: "yaok-sim", targets: ["yaok-sim"]),
    ],
    dependencies: [
        // Exactly one version, so that every clone builds the same code. Package.resolved is
        // not committed (.gitignore): it records commit ids, and the one of 1.8.2 differs
        // between github.com (6a52f325...) and the local mirrors some build machines resolve
        // GitHub through (same files, a re-made commit), so a committed file from one would
        // not resolve on the other. A version tag is the same everywhere.
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The kernel's Bluetooth socket interface (declared in the shim: no library, no headers).
        .systemLibrary(name: "CBluetooth"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // libpq, for the relay's PostgreSQL store (several relay processes over one database).
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // include/yaok.h as a module: types for the FFI target, signatures for a test.
        .systemLibrary(name: "CYaOK"),
        // epoll and eventfd for each node's event thread (Glibc's module lacks eventfd).
        .systemLibrary(name: "CLinux"),
        // The core, in layers whose order the compiler enforces (each imports only those
        // below it): support (errors, JSON, the event loop) → wire (pure: packets, frames,
        // fragments, the BLE advertisement and mgmt codecs; the fuzzer builds it alone) → crypto (libsodium) → store (SQLite) →
        // node (lock, contacts, delivery). `YaOK` re-exports them all for Swift apps.
        .target(name: "YaOKSupport"),
        .target(name: "YaOKLoop", dependencies: ["YaOKSupport", "CLinux"]),
        // The socket system calls of every transport and server (errno captured in each).
        .target(name: "YaOKSystem", dependencies: ["YaOKSupport"]),
        .target(name: "YaOKWire", dependencies: ["YaOKSupport"]),
        .target(name: "YaOKCrypto", dependencies: ["YaOKSupport", "YaOKWire", "CSodium"]),
        .target(name: "YaOKStore", dependencies: ["YaOKSupport", "YaOKWire", "YaOKCrypto", "CSQLite"]),
        .target(name: "YaOKNode", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore"]),
        // Transports: sockets on the node's event loop, each connection a link (LAN, the relay
        // client, and BLE through the kernel's Bluetooth sockets).
        .target(name: "YaOKTransports", dependencies: ["YaOKSupport", "YaOKSystem", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKNode", "YaOKTLS", "CBluetooth"]),
        // TLS 1.3 over a non-blocking descriptor (OpenSSL), for the relay client and server.
        .target(name: "YaOKTLS", dependencies: ["YaOKSupport", "COpenSSL"]),
        .target(name: "YaOK", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKNode", "YaOKTLS", "YaOKTransports"]),
        .target(
            name: "YaOKFFI",
            dependencies: ["YaOK", "YaOKSupport", "CYaOK"],
            linkerSettings: [.unsafeFlags(["-Xlinker", "-soname=libyaok.so.\(abiVersion)"])]
        ),
        .executableTarget(
            name: "yaok",
            dependencies: ["YaOK", "QRCode", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .executableTarget(name: "yaok-bench", dependencies: ["YaOK", "CSodium"]),
        // A child process the store tests kill with SIGKILL in the middle of writes.
        .executableTarget(name: "yaok-store-writer", dependencies: ["YaOK"]),
        .testTarget(name: "YaOKTests", dependencies: ["YaOK", "YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKNode", "CSodium", "yaok-store-writer"]),
        // One LAN peer for scripts/test-lan-netns (until `yaok run --lan` exists).
        .executableTarget(name: "yaok-lan-probe", dependencies: ["YaOK"]),
        // One peer of the reliability test (scripts/test-reliability), killed and restarted.
        .executableTarget(name: "yaok-soak", dependencies: ["YaOK"]),
        .testTarget(name: "YaOKTransportsTests", dependencies: ["YaOKTransports", "YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKNode", "YaOKTLS", "YaOKRelayServer"]),
        // Runs the built `yaok` executable as a subprocess.
        .testTarget(name: "YaOKCLITests", dependencies: ["yaok", "QRCode"]),
        // The entry points are @c @implementation (checked against include/yaok.h by the
        // compiler); the test finds each declared function in its own process, whose dynamic
        // symbol table therefore lists them (--export-dynamic).
        .testTarget(name: "YaOKFFITests", dependencies: ["YaOKFFI", "CYaOK"],
                    linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]),
        // The relay server (docs/PROTOCOL.md §8, docs/RELAY.md): sessions, group-commit
        // store, limits on the node's event loop; `yaok-relay` is its thin command line.
        .target(name: "YaOKRelayServer", dependencies: ["YaOKSupport", "YaOKSystem", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKTLS", "CPostgres"]),
        .executableTarget(
            name: "yaok-relay",
            dependencies: ["YaOKRelayServer", "YaOKSupport", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The relay's load test and benchmark (scripts/test-relay-load, scripts/bench-relay):
        // many raw protocol clients on one epoll thread; starts, SIGKILLs and restarts the relay.
        .executableTarget(name: "yaok-relay-load", dependencies: ["YaOKSupport", "YaOKSystem", "YaOKWire", "YaOKCrypto", "YaOKTLS", "CLinux", "YaOKRelayServer"]),
        // Depends on the executable so that the real-process test finds it built.
        .testTarget(name: "YaOKRelayServerTests", dependencies: ["YaOKRelayServer", "YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKTLS", "yaok-relay"]),
        // Loopback only; peers that misbehave (TLS 1.2, no ALPN) are raw OpenSSL.
        .testTarget(name: "YaOKTLSTests", dependencies: ["YaOKTLS", "YaOKSupport", "COpenSSL"]),
        // The Swift example peer (examples/swift): interoperates with examples/c/peer.c and
        // examples/python/peer.py (scripts/test-examples).
        .executableTarget(name: "yaok-peer-swift", dependencies: ["YaOK"], path: "examples/swift"),
        // QR codes of contact cards for the CLI (not in libyaok.so): encoded with libqrencode,
        // drawn in the terminal or written as a PNG (libpng), and read back from a PNG or
        // JPEG photo (libpng, libjpeg) with ZBar.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        .systemLibrary(name: "CImageIO", pkgConfig: "libpng", providers: [.apt(["libpng-dev", "libjpeg-dev"])]),
        .target(name: "QRCode", dependencies: ["CQREncode", "CZBar", "CImageIO"]),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode"]),
        // The delay-tolerant simulator (docs/SIMULATOR.md): contact plans, workloads, routers
        // (real nodes and packet-level models) and metrics on a virtual clock; `yaok-sim` is
        // its command line.
        .target(name: "YaOKSim", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKStore", "YaOKNode", "CSodium"]),
        .executableTarget(name: "yaok-sim", dependencies: ["YaOKSim"]),
        .testTarget(name: "YaOKSimTests", dependencies: ["YaOKSim", "YaOKSupport"], exclude: ["Fixtures"]),
    ]
)
