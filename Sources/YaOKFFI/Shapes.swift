import CYaOK
import YaOK

// The shapes most entry points share, written once so that an entry point is a line or two
// (as the node JSON calls are through `nodeJSON`). Each keeps the order the entry points
// checked by hand: the object (node, handle or event) first, then the required out-pointer,
// then the body, which checks its own arguments; so a NULL out-pointer is refused before any
// work is done, and the status and message of every failure stay what they were.

/// Resolve `source`, require `out` (named `name` in the NULL message), then let `body` write
/// through it; inside `boundary`, so every failure becomes a status and a message.
func fill<Source, Out>(_ source: () throws -> Source, _ out: Out?, _ name: String,
                       _ body: (Source, Out) throws -> Void) -> Int32 {
    boundary {
        let s = try source()
        let o = try required(out, name)
        try body(s, o)
    }
}

/// `fill` for a single value stored in `*out`.
func fillValue<Source, T>(_ source: () throws -> Source, _ out: UnsafeMutablePointer<T>?, _ name: String,
                          _ value: (Source) throws -> T) -> Int32 {
    fill(source, out, name) { s, o in o.pointee = try value(s) }
}

/// A node call whose result goes to `*out`.
func nodeValue<T>(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<T>?, _ name: String,
                  _ value: (Node) throws -> T) -> Int32 {
    fillValue({ try YaOKFFI.node(node) }, out, name, value)
}

/// A node call that makes a new handle for `*out` (named "out", as every such call names it).
func nodeHandle(_ node: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?,
                _ make: (Node) throws -> Handle) -> Int32 {
    nodeValue(node, out, "out") { n in Handles.make(try make(n)) }
}

/// A getter on a message handle.
func messageValue<T>(_ m: OpaquePointer?, _ out: UnsafeMutablePointer<T>?, _ name: String,
                     _ value: (MessageHandle) throws -> T) -> Int32 {
    fillValue({ try messageHandle(m) }, out, name, value)
}

/// A getter on a contact handle.
func contactValue<T>(_ c: OpaquePointer?, _ out: UnsafeMutablePointer<T>?, _ name: String,
                     _ value: (ContactHandle) throws -> T) -> Int32 {
    fillValue({ try Handles.borrow(c, as: ContactHandle.self, "contact") }, out, name, value)
}

/// A getter on the event a callback was given.
func eventValue<T>(_ event: UnsafePointer<yaok_event>?, _ out: UnsafeMutablePointer<T>?, _ name: String,
                   _ value: (EventView) throws -> T) -> Int32 {
    fillValue({ try LiveEvents.view(event) }, out, name, value)
}

/// A node call with no out-pointer: the node, then the body (which checks its own arguments).
func withNode(_ node: OpaquePointer?, _ body: (Node) throws -> Void) -> Int32 {
    boundary { try body(try YaOKFFI.node(node)) }
}

/// A handle getter that hands the caller a string of its own (yaok_string_free): the handle
/// (of kind `type`, named `kind` in messages), then the required `out`.
func handleString<H: Handle>(_ pointer: OpaquePointer?, _ type: H.Type, _ kind: String,
                             _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                             _ value: (H) throws -> String) -> Int32 {
    fill({ try Handles.borrow(pointer, as: type, kind) }, out, "out") { h, out in try give(try value(h), to: out) }
}

/// A call that makes a new handle from its arguments alone: the required `out` first, then
/// the handle `make` builds (it checks its own arguments).
func newHandle(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ make: () throws -> Handle) -> Int32 {
    fillValue({ () }, out, "out") { Handles.make(try make()) }
}

/// `fill` with several out-pointers: the source, then each out-pointer in the order given
/// (each named in its NULL message), then the body, which writes through them.
func fillEach<Source, each Out>(_ source: () throws -> Source, _ outs: repeat (UnsafeMutablePointer<each Out>?, String),
                                then body: (Source, repeat UnsafeMutablePointer<each Out>) throws -> Void) -> Int32 {
    boundary {
        let s = try source()
        let pointers = (repeat try required((each outs).0, (each outs).1))
        try body(s, repeat each pointers)
    }
}

/// `fillEach` where the body makes one value per out-pointer (a tuple, in the same order),
/// stored only once all of them are made: a failure writes none.
func fillValues<Source, each T>(_ source: () throws -> Source, _ outs: repeat (UnsafeMutablePointer<each T>?, String),
                                then values: (Source) throws -> (repeat each T)) -> Int32 {
    fillEach(source, repeat each outs) { (s: Source, pointers: repeat UnsafeMutablePointer<each T>) in
        let v = try values(s)
        repeat (each pointers).pointee = each v
    }
}

/// Bytes handed to the caller (yaok_bytes_free) through `(out, out_len)`: both required
/// first, then the bytes the body makes.
func giveBytes(_ out: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ outName: String,
               _ length: UnsafeMutablePointer<Int>?, _ lengthName: String, _ make: () throws -> [UInt8]) -> Int32 {
    fillEach({ () }, (out, outName), (length, lengthName)) { _, out, length in try give(try make(), to: out, length: length) }
}

/// A string handed to the caller (yaok_string_free) through the required `out` (named
/// `name`), made by the body from its arguments alone.
func giveString(_ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ name: String,
                _ make: () throws -> String) -> Int32 {
    fill({ () }, out, name) { _, out in try give(try make(), to: out) }
}

/// A caller-sized struct (Sized.swift) filled from `source`: the source, the required `out`,
/// then its `struct_size` checked against `minimum` before the body does any work; the
/// struct the body makes is written up to that size.
func sizedValue<Source, C>(_ source: () throws -> Source, _ out: UnsafeMutablePointer<C>?, minimum: Int,
                           _ structName: String, _ make: (Source) throws -> C) -> Int32 {
    fill(source, out, "out") { s, out in
        let size = structSize(out)
        try checkStructSize(size, minimum: minimum, structName)
        try writeSized(try make(s), to: out, structSize: size, minimum: minimum, structName)
    }
}

/// A string handed to the caller (yaok_string_free): `source` makes it (checking its own
/// arguments first), then the required `out` (named `name`) is checked and written.
func stringOut(_ source: () throws -> String, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
               _ name: String) -> Int32 {
    fill(source, out, name) { value, out in try give(value, to: out) }
}

/// A call on a live handle (of kind `type`, named `kind` in messages) with no out-pointer.
func withHandle<H: Handle>(_ pointer: OpaquePointer?, _ type: H.Type, _ kind: String, _ body: (H) throws -> Void) -> Int32 {
    boundary { try body(try Handles.borrow(pointer, as: type, kind)) }
}
