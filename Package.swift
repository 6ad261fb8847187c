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
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The kernel's Bluetooth socket interface (declared in the shim: no library, no headers).
        .systemLibrary(name: "CBluetooth"),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // include/yaok.h as a module: types for the FFI target, signatures for a test.
        .systemLibrary(name: "CYaOK"),
        // epoll and eventfd for each node's event thread (Glibc's module lacks eventfd).
        .systemLibrary(name: "CLinux"),
        // The core, in layers whose order the compiler enforces (each imports only those
        // below it): support (errors, JSON, the event loop) → wire (pure: packets, frames,
        // fragments; the fuzzer builds it alone) → crypto (libsodium) → store (SQLite) →
        // node (lock, contacts, delivery). `YaOK` re-exports them all for Swift apps.
        .target(name: "YaOKSupport"),
        .target(name: "YaOKLoop", dependencies: ["YaOKSupport", "CLinux"]),
        .target(name: "YaOKWire", dependencies: ["YaOKSupport"]),
        .target(name: "YaOKCrypto", dependencies: ["YaOKSupport", "YaOKWire", "CSodium"]),
        .target(name: "YaOKStore", dependencies: ["YaOKSupport", "YaOKWire", "YaOKCrypto", "CSQLite"]),
        .target(name: "YaOKNode", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore"]),
        // Transports: sockets on the node's event loop, each connection a link (LAN, and BLE through
        // the kernel's Bluetooth sockets).
        .target(name: "YaOKTransports", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKNode", "CBluetooth"]),
        .target(name: "YaOK", dependencies: ["YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKNode", "YaOKTransports"]),
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
        .testTarget(name: "YaOKTransportsTests", dependencies: ["YaOKTransports", "YaOKSupport", "YaOKLoop", "YaOKWire", "YaOKCrypto", "YaOKStore", "YaOKNode"]),
        // Runs the built `yaok` executable as a subprocess.
        .testTarget(name: "YaOKCLITests", dependencies: ["yaok"]),
        // Compiles each @_cdecl entry point against its declaration in include/yaok.h.
        .testTarget(name: "YaOKFFITests", dependencies: ["YaOKFFI", "CYaOK"]),
        // A pure-Swift QR code encoder (no Foundation), for printing contact cards.
        .target(name: "QRCode"),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode"]),
    ]
)
