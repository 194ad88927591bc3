/// A command-line problem: printed as one line and exits 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    /// The one-line message, without the `broadcast: ` prefix.
    public let description: String
    /// A usage error saying `message`.
    public init(_ message: String) { description = message }
}
