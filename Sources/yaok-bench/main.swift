// yaok-bench: speed and memory figures for Ya OK core. Run in release mode:
//   swift run -c release yaok-bench [suite ...]      (no suite: all of them)
// Each suite prints its figures and the target it is measured against.

let suites: [(name: String, run: () throws -> Void)] = [
    ("crypto", CryptoBench.run),
    ("fs", ForwardSecrecyBench.run),
    ("store", StoreBench.run),
    ("carry", CarryStoreBench.run),
    ("carry-evict", CarryEvictionBench.run),
    ("wire", WireBench.run),
    ("delivery", DeliveryBench.run),
    ("bulk", BulkBench.run),
    ("send", SendBench.run),
    ("kdf", KDFBench.run),
    ("lan", LANBench.run),
    ("reconcile", ReconcileBench.run),
]

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "lan-peer" {
    try LANBench.peer(Array(CommandLine.arguments.dropFirst(2)))
}

let wanted = Array(CommandLine.arguments.dropFirst())
print("stores in \(Measure.scratchDirectory) (YAOK_BENCH_DIR)"
      + (Measure.forwardSecrecy ? "" : "; forward secrecy off (YAOK_BENCH_FORWARD_SECRECY=0)"))
for suite in suites where wanted.isEmpty || wanted.contains(suite.name) {
    print("== \(suite.name)")
    try suite.run()
}
