import BroadcastCore

/// A sink whose `close` can still lose data: a recording's last fragment, its final sync. The
/// destination asks after closing it, so a run whose recording lost its end says so (a warning,
/// and exit 4 when the recording was what the run was for) instead of ending as if complete.
package protocol ClosingSink: DestinationSink {
    /// Why the last `close` did not complete the file; nil when it did (or before any close).
    var closeFailure: TransportError? { get }
}
