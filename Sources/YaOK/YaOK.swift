// The Swift API of Ya OK core for Swift apps: one import for every layer. The layers are
// separate targets so that the compiler keeps their order (wire → crypto → store → node);
// an app sees them as one module.
@_exported import YaOKSupport
@_exported import YaOKLoop
@_exported import YaOKWire
@_exported import YaOKCrypto
@_exported import YaOKStore
@_exported import YaOKNode
@_exported import YaOKTransports
