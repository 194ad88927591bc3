/// A command-line problem: printed as one line and exits 2.
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ message: String) { description = message }
}
