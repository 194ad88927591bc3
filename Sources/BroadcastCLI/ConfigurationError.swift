/// Why the options cannot become a broadcast: one line for the user and the exit code it maps to.
package struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// 2 for usage and configuration problems, 3 when a capture permission was denied.
    package var exitCode: ExitCode
    /// One line, without the `broadcast: ` prefix.
    package var message: String

    /// An error exiting with `exitCode` and saying `message`.
    package init(_ exitCode: ExitCode, _ message: String) {
        self.exitCode = exitCode
        self.message = message
    }

    package var description: String { message }
}
