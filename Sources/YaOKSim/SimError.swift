/// Why a plan, a file or an option was refused: a sentence a person can act on.
public struct SimError: Error, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
