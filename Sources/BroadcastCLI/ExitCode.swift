/// The documented exit codes of `broadcast`.
package enum ExitCode: Int32, Sendable {
    /// Clean stop: duration reached, end of input, or SIGINT/SIGTERM/SIGHUP.
    case success = 0
    /// `--check-heartbeat`: the heartbeat file is missing or older than `--max-age`.
    case unhealthy = 1
    /// Bad usage or configuration (flags, values, input format, memory plan).
    case usage = 2
    /// Could not connect or publish (unreachable server, key or app rejected by the server, TLS refused,
    /// portal denied); never for a stop or a lost link.
    case connect = 3
    /// Failure while streaming (connection lost and not recovered, input error mid-stream).
    case streaming = 4
}
