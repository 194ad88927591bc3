import BroadcastCore


/// The session's destinations, primary first: the fan-out point after the interleaver, and the
/// one place a destination's failure becomes a session failure or a warning.
///
/// The primary (the first network publisher, else the first destination) is what "sent" and the
/// status report on. The weight of a loss: with network publishers, the run fails when every one
/// of them is lost and a lost one is a warning while another still delivers; a recording is
/// never essential then. Without any, the primary (the first file or sink) is essential and the
/// others are warnings. `requireAll` makes every loss fatal.
package final class DestinationSet: @unchecked Sendable {
    package let all: [Destination]
    /// Any destination lost stops the run (`--require-all`).
    let requireAll: Bool
    /// Written only by the housekeeping thread (and by `finish` after it stopped).
    private var reported: [Bool]

    package init(_ destinations: [Destination], requireAll: Bool = false) {
        all = destinations
        self.requireAll = requireAll
        reported = Array(repeating: false, count: destinations.count)
        statsStorage.withLock { $0.reserveCapacity(destinations.count) }
    }

    package var primary: Destination? { all.first }

    /// Copies `packet` into every destination that takes packets at `stage` and still takes them
    /// (live or reconnecting); AAC priming only where the destination takes it, and never at
    /// `.encoded`. The one entry point the interleaver feeds.
    package func push(_ packet: EncodedPacket, at stage: PacketStage) {
        for d in all where d.capabilities.stage == stage && d.acceptsPackets
            && (!packet.isPriming || d.capabilities.takesPriming) {
            d.queue.push(packet)
        }
    }

    /// Some destination takes packets at `.encoded`: the interleaver delivers there too.
    package var takesEncodedStage: Bool { all.contains { $0.capabilities.stage == .encoded } }

    /// The destinations whose loss together ends the run.
    private func isEssential(_ d: Destination) -> Bool {
        all.contains { $0.capabilities.isNetworkPublisher } ? d.capabilities.isNetworkPublisher : d.isPrimary
    }

    /// Reports each destination that failed since the last call, once: a loss that ends the run
    /// as `.failed` plus the error that stops the session (`onFailure`), the others as warnings.
    package func reportNewFailures(onEvent: (BroadcastEvent) -> Void, onFailure: (BroadcastError) -> Void) {
        for (i, d) in all.enumerated() where d.state == .failed && !reported[i] {
            reported[i] = true
            var message = d.error?.description ?? "destination failed"
            if !message.contains(d.sink.displayName) { message = "\(d.sink.displayName): \(message)" }
            let allEssentialLost = !all.contains { isEssential($0) && $0.state != .failed }
            if requireAll || (isEssential(d) && allEssentialLost) {
                if requireAll && !allEssentialLost { message += " (--require-all: every destination must stay up)" }
                // A refusal (key or certificate) is a connect failure (exit 3) even mid-stream.
                onFailure(d.error?.isRefusal == true ? .connect(message) : .streaming(message))
                onEvent(.failed(message))
            } else {
                onEvent(.warning("\(message); streaming continues without it"))
            }
        }
    }

    /// At the end of a run (after the destinations are finished): the destinations that ended
    /// while reconnecting, each with how long it was down, and whether that fails the run under
    /// the same weights as `reportNewFailures`. A destination that failed earlier was reported then.
    package func lostAtEnd() -> (lines: [String], fatal: Bool) {
        let down = all.filter { $0.endedWhileDown }
        guard !down.isEmpty else { return ([], false) }
        let lines = down.map { d in
            "\(d.sink.displayName): still reconnecting when the run ended, down for \(fixed(d.downtimeSeconds, 1)) s "
                + "(\(d.error?.description ?? "connection lost")); what was sent after the connection was lost "
                + "did not reach the server"
        }
        let allEssentialDown = !all.contains { isEssential($0) && !$0.endedWhileDown && $0.state != .failed }
        return (lines, requireAll || (down.contains { isEssential($0) } && allEssentialDown))
    }

    /// Each destination's stats line, primary first, refreshed in storage made once (`map` built a
    /// new array every report). When the previous result is no longer held, this allocates nothing.
    package var stats: [DestinationStats] {
        statsStorage.withLock { lines in
            lines.removeAll(keepingCapacity: true)
            for d in all { lines.append(d.statsNow) }
            return lines
        }
    }
    private let statsStorage = Locked<[DestinationStats]>([])

    /// Destinations' display names (secrets redacted).
    package var names: [String] { all.map { $0.sink.displayName } }
}
