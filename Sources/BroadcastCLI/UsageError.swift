/// A command-line problem: printed as one line and exits 2.
package struct UsageError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The one-line message, without the `broadcast: ` prefix.
    package let description: String
    /// A usage error saying `message`.
    package init(_ message: String) { description = message }
}
