import YaOK

/// The shape of the node's JSON entry points: the node, the required `out_json`, then the
/// JSON the body makes from the node, handed to the caller as a string (yaok_string_free).
/// Checked in that order, as each entry point did by hand, so a NULL out-pointer is refused
/// before the node does any work, and the body's own arguments are checked inside it.
func nodeJSON(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
              _ body: (Node) throws -> JSON) -> Int32 {
    boundary {
        let n = try YaOKFFI.node(node)
        let out = try required(out, "out_json")
        try give(try body(n).serialized, to: out)
    }
}
