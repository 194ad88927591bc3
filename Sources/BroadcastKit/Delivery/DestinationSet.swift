/// The session's destinations, primary first: the fan-out point after the interleaver, and the
/// one place a destination's failure becomes a session failure or a warning.
///
/// The primary (the first network publisher, else the first destination) is what "sent" and the
/// status report on; losing it stops the broadcast. Losing any other destination is a warning.
package final class DestinationSet: @unchecked Sendable {
    package let all: [Destination]
    /// Written only by the housekeeping thread (and by `finish` after it stopped).
    private var reported: [Bool]

    package init(_ destinations: [Destination]) {
        all = destinations
        reported = Array(repeating: false, count: destinations.count)
    }

    package var primary: Destination? { all.first }

    /// Copies `tag` into every destination that still takes tags. Called by the interleaver.
    package func push(_ tag: FLVTag) {
        for d in all where d.acceptsTags { d.queue.push(tag) }
    }

    /// Reports each destination that failed since the last call, once: the primary's failure as
    /// `.failed` plus the error that stops the session (`onFailure`), the others as warnings.
    package func reportNewFailures(onEvent: (BroadcastEvent) -> Void, onFailure: (BroadcastError) -> Void) {
        for (i, d) in all.enumerated() where d.state == .failed && !reported[i] {
            reported[i] = true
            var message = d.error?.description ?? "destination failed"
            if !message.contains(d.sink.displayName) { message = "\(d.sink.displayName): \(message)" }
            if d.isPrimary {
                // A refusal (key or certificate) is a connect failure (exit 3) even mid-stream.
                onFailure(d.error?.isRefusal == true ? .connect(message) : .streaming(message))
                onEvent(.failed(message))
            } else {
                onEvent(.warning("\(message); streaming continues without it"))
            }
        }
    }

    /// Destinations' display names (secrets redacted).
    package var names: [String] { all.map { $0.sink.displayName } }
}
