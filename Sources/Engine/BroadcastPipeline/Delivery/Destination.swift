#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import BroadcastCore

/// One output of the session: a bounded `SendQueue` drained by its own sender thread into a
/// `PacketSink`, which muxes the packets into its own format (an embedder's `TagSink` through
/// `FLVTagSinkAdapter`, each packet framed as an FLV tag in the queue's headroom).
///
/// The sender is the only thread that touches the sink, so a slow network can only fill this
/// destination's queue (where the congestion policy applies); it never blocks a lane.
package final class Destination: @unchecked Sendable {
    package enum State: Int, Sendable { case idle = 0, live, reconnecting, failed, closed }

    package let sink: any PacketSink
    /// What the sink stands for (`AdaptingSink.adapted`: an embedder's own sink), else the sink:
    /// where the optional conformances are looked for.
    package let endpoint: AnyObject
    /// The sink's capabilities, read once here.
    package let capabilities: DestinationCapabilities
    /// The sink as a link that reports on itself (nil for recordings and most custom sinks).
    package let feedback: LinkFeedback?
    /// The sink as a TCP link whose kernel reports on the path (RTMP), for the bitrate controller.
    let tcpPath: TCPPathFeedback?
    package let queue: SendQueue
    /// The destination whose delivery is reported as "sent" in the stats (RTMP when present).
    package let isPrimary: Bool
    /// Video capture-to-socket latency on this destination.
    package let latency = LatencyHistogram()
    private let stats: BroadcastStats
    private let thread: WorkerThread
    private let stopping = Atomic<Bool>(false)
    private let stateValue = Atomic<Int>(State.idle.rawValue)
    private let failure = Locked<TransportError?>(nil)
    private let sentBytes = Atomic<Int>(0)
    private let reconnect: ReconnectPolicy
    /// Block mode (`Backpressure.stageWaitNs`): pushes wait for this sink while it is live, and
    /// `finish` drains it for as long as it makes progress.
    private let blockWaitNs: Int64?
    /// Block mode into a real-time transport (`DestinationCapabilities.needsRealTimeInput`): the wall time of
    /// media time 0 for pacing sends (sender thread only; 0 until the first media packet).
    private let pacesToMediaTime: Bool
    private var paceOriginNs: Int64 = 0
    private let reconnectCount = Atomic<Int>(0)
    /// The run ended while this destination was reconnecting (reported as "lost").
    private let endedDown = Atomic<Bool>(false)
    /// When the link went down (0 while live), and the downtime of earlier outages.
    private let downSinceNs = Atomic<Int64>(0)
    private let downAccumulatedNs = Atomic<Int64>(0)
    /// Send rate over the last second, in bits/s, sampled by the housekeeper.
    private let rateBitsPerSecond = Atomic<Int>(0)
    private var rateLastBytes = 0
    private var rateLastNs: Int64 = 0
    /// The configuration packets (metadata, codec configurations), kept to resend first on every
    /// reconnect; each payload with its headroom in front, as the queue keeps it.
    private let headerStore = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    private var headers: [(codec: PacketCodec, offset: Int, length: Int)] = []
    /// After a reconnect, video waits for the next keyframe so no P-frame goes out without its references.
    private var videoNeedsKeyframe = false
    /// An IDR was asked for since the server requested a reconnect (asked once per request).
    private var keyframeAskedForRequest = false
    /// When the sink last accepted a packet (sender thread only).
    private var lastWriteNs: Int64 = 0
    private var rng = SplitMixRandom(seed: UInt64(truncatingIfNeeded: MediaTime.now()))
    /// Events for the session (reconnecting/reconnected); called from the sender thread.
    package var onEvent: (@Sendable (BroadcastEvent) -> Void)?
    /// Asks the encoder for an IDR (after a reconnect).
    package var onKeyframeNeeded: (@Sendable () -> Void)?

    package init(sink: any PacketSink, policy: CongestionPolicy, isPrimary: Bool, stats: BroadcastStats,
                reconnect: ReconnectPolicy = .never, blockWaitNs: Int64? = nil) {
        self.sink = sink
        endpoint = (sink as? AdaptingSink)?.adapted ?? sink
        capabilities = sink.capabilities
        feedback = endpoint as? LinkFeedback
        tcpPath = endpoint as? TCPPathFeedback
        self.isPrimary = isPrimary
        self.stats = stats
        self.reconnect = reconnect
        self.blockWaitNs = blockWaitNs
        pacesToMediaTime = blockWaitNs != nil && capabilities.needsRealTimeInput
        queue = SendQueue(policy: policy, stats: stats, blockWaitNs: blockWaitNs)
        thread = WorkerThread(name: isPrimary || capabilities.isNetworkPublisher ? "bk-send" : "bk-record")
    }

    deinit { headerStore.deallocate() }

    /// Queues a configuration packet and keeps a copy for reconnects. Call before `open()`.
    package func pushHeader(_ packet: EncodedPacket) {
        let used = headers.last.map { $0.offset + $0.length } ?? 0
        let at = used + EncodedPacket.framingHeadroom
        if at + packet.data.count <= headerStore.count, let src = packet.data.baseAddress {
            (headerStore.baseAddress! + at).copyMemory(from: src, byteCount: packet.data.count)
            headers.append((packet.codec, at, packet.data.count))
        }
        queue.push(packet)
    }

    /// True while packets should still be queued for this destination (live or reconnecting).
    var acceptsPackets: Bool { let s = state; return s == .live || s == .reconnecting }

    package var state: State { State(rawValue: stateValue.load(ordering: .acquiring)) ?? .failed }

    /// Every state change goes through here so the downtime clock starts when the link is lost
    /// and stops when it is back (or when the run ends).
    /// `since`: when the link really stopped delivering (the last write that went through), so a
    /// stall before the failure was noticed counts as down too.
    private func setState(_ next: State, since: Int64 = 0) {
        let now = MediaTime.now()
        switch next {
        case .reconnecting, .failed:
            let start = since > 0 && since < now ? since : now
            if downSinceNs.load(ordering: .acquiring) == 0 { downSinceNs.store(start, ordering: .releasing) }
        case .live, .closed:
            let since = downSinceNs.exchange(0, ordering: .acquiringAndReleasing)
            if since > 0 { downAccumulatedNs.add(now - since, ordering: .relaxed) }
        case .idle:
            break
        }
        stateValue.store(next.rawValue, ordering: .releasing)
        // Block mode: only a live sink holds the producer back; a push waiting for a sink that
        // just went down is woken and drops (counted) as the queue's cap says.
        if blockWaitNs != nil { queue.setHoldsProducer(next == .live) }
    }

    /// Seconds this destination was not delivering after it first went live (lost links,
    /// reconnects, a failure until the end of the run).
    package var downtimeSeconds: Double {
        let since = downSinceNs.load(ordering: .acquiring)
        let open = since > 0 ? MediaTime.now() - since : 0
        return Double(downAccumulatedNs.load(ordering: .relaxed) + open) / 1e9
    }

    /// The run ended while this destination was reconnecting (set by `finish`).
    var endedWhileDown: Bool { endedDown.load(ordering: .acquiring) }

    /// Media time waiting to go out: this destination's send queue plus what waits inside the
    /// transport itself (SRT's unacknowledged send buffer); what the bitrate controller follows.
    var backlogMs: Int { queue.queuedDurationMs + (feedback?.transportBacklogMs ?? 0) }

    /// Successful reconnects of this destination.
    var reconnects: Int { reconnectCount.load(ordering: .relaxed) }

    /// Samples the send rate; called once a second by the housekeeper only.
    package func sampleRate(nowNs: Int64) {
        let bytes = bytesSent
        if rateLastNs > 0, nowNs > rateLastNs {
            rateBitsPerSecond.store(Int(Double(bytes - rateLastBytes) * 8e9 / Double(nowNs - rateLastNs)), ordering: .relaxed)
        }
        rateLastBytes = bytes
        rateLastNs = nowNs
    }

    /// This destination's line in a stats report (no key: the name is the redacted display name).
    package var statsNow: DestinationStats {
        let word: String
        switch state {
        case .idle: word = "connecting"
        case .live: word = "live"
        case .reconnecting: word = "reconnecting"
        case .failed: word = "failed"
        case .closed: word = endedDown.load(ordering: .acquiring) ? "lost" : "closed"
        }
        return DestinationStats(name: sink.displayName, kind: sink.kind.rawValue, state: word,
                                kbps: Double(rateBitsPerSecond.load(ordering: .relaxed)) / 1000,
                                bytesSent: bytesSent, queueBytes: queue.queuedBytes, queueMs: queue.queuedDurationMs,
                                drops: queue.droppedTags, reconnects: reconnects, downtimeSeconds: downtimeSeconds,
                                link: feedback?.linkStats, peerEstimateKbps: feedback?.peerEstimatedKbps)
    }
    /// The error that stopped this destination, if any.
    var error: TransportError? { failure.withLock { $0 } }
    /// Bytes the sink accepted, counted as FLV tag bodies (see `account`).
    var bytesSent: Int { sentBytes.load(ordering: .relaxed) }

    /// Opens the sink on the caller's thread (so start-up errors reach `start()`), then starts the sender.
    package func open() throws(TransportError) {
        try sink.open()
        setState(.live)
        do {
            try thread.start { [self] in run() }
        } catch {
            setState(.failed)
            sink.close()
            throw TransportError.connectFailed("\(sink.displayName): \(error)")
        }
    }

    private func run() {
        while true {
            let got = queue.withNext(deadlineNs: MediaTime.now() + 200_000_000) { packet in
                guard state == .live else { return }
                let isVideoFrame = packet.track == .video && !packet.isConfig
                if isVideoFrame && videoNeedsKeyframe {
                    guard packet.isKeyframe else { return }
                    videoNeedsKeyframe = false
                }
                // A server's reconnect request is honoured at a keyframe: the old session ends on a
                // whole GOP and the new one starts decodable with this very frame.
                if isVideoFrame && packet.isKeyframe && feedback?.reconnectRequested == true {
                    guard reconnectAtKeyframe() else { return }
                }
                if pacesToMediaTime && !packet.isConfig { pace(packet) }
                do throws(TransportError) {
                    try write(packet)
                    lastWriteNs = MediaTime.now()
                    sentBytes.add(packet.accountedBytes, ordering: .relaxed)
                    if feedback?.reconnectRequested == true && !keyframeAskedForRequest {
                        keyframeAskedForRequest = true
                        onKeyframeNeeded?()
                    }
                    if isPrimary {
                        account(packet)
                        if packet.captureNs > 0 { latency.record(MediaTime.now() - packet.captureNs) }
                    }
                } catch {
                    handleFailure(error)
                }
            }
            if state == .reconnecting { reconnectLoop() }
            if !got && stopping.load(ordering: .acquiring) { break }
        }
    }

    private func write(_ packet: EncodedPacket) throws(TransportError) { try sink.write(packet) }

    /// Holds a media packet until its media time, counted from when the first one went out (as
    /// `ffmpeg -re` reads its input): a producer far ahead of real time then waits in its push.
    /// A packet more than a second late (the producer paused, the link is slower than the stream, a
    /// reconnect) starts the count again from now, so lateness never turns into a burst.
    private func pace(_ packet: EncodedPacket) {
        let media = packet.timestampMs * 1_000_000
        let now = MediaTime.now()
        if paceOriginNs == 0 || now - (paceOriginNs + media) > 1_000_000_000 {
            paceOriginNs = now - media
            return
        }
        let due = paceOriginNs + media
        while !stopping.load(ordering: .acquiring) {
            let left = due - MediaTime.now()
            if left <= 0 { return }
            var ts = timespec(tv_sec: 0, tv_nsec: Int(min(left, 20_000_000)))
            nanosleep(&ts, nil)
        }
    }

    /// Closes and reopens the sink for a server's reconnect request (to the new tcUrl when one was
    /// given), without backoff. False when that failed: the usual reconnect takes over.
    private func reconnectAtKeyframe() -> Bool {
        keyframeAskedForRequest = false
        if let refused = feedback?.reconnectWarning {
            onEvent?(.warning(refused))
        } else {
            onEvent?(.warning("\(sink.displayName): the server asked for a reconnect (E-RTMP); reconnecting at this keyframe"))
        }
        do {
            try reopen()
        } catch {
            handleFailure(error)
            return false
        }
        stats.update { $0.reconnects += 1 }
        reconnectCount.add(1, ordering: .relaxed)
        onEvent?(.reconnected(count: stats.snapshot().reconnects))
        return true
    }

    /// Opens the sink again and resends the stream's headers: every new session (a reconnect, a
    /// server's reconnect request) starts with them, so it is decodable from its first keyframe.
    private func reopen() throws(TransportError) {
        try sink.open()
        for h in headers {
            try write(EncodedPacket(codec: h.codec,
                                    data: UnsafeRawBufferPointer(start: headerStore.baseAddress! + h.offset, count: h.length),
                                    timestampMs: 0, isKeyframe: h.codec == .h264, isConfig: true,
                                    headroom: EncodedPacket.framingHeadroom))
        }
    }

    private func handleFailure(_ error: TransportError) {
        var error = error
        if stopping.load(ordering: .acquiring), capabilities.isNetworkPublisher, !error.isRefusal {
            // The stop's deadline cut a write that was not getting through: say so, not what the
            // cut socket reported.
            let down = Double(MediaTime.now() - (lastWriteNs > 0 ? lastWriteNs : MediaTime.now())) / 1e9
            error = .writeFailed("\(sink.displayName): not delivering when the run ended (nothing got through for "
                                 + "\(fixed(down, 1)) s: a stalled link); what was queued did not reach the server")
        }
        failure.withLock { $0 = error }
        if reconnect.maxAttempts >= 0, !stopping.load(ordering: .acquiring), !error.isRefusal {
            setState(.reconnecting, since: lastWriteNs)
            onEvent?(.warning("\(describe(error)); reconnecting"))
            return
        }
        setState(.failed, since: lastWriteNs)
    }

    /// `error` with this destination's name in front (once).
    private func describe(_ error: TransportError) -> String {
        let m = error.description
        return m.contains(sink.displayName) ? m : "\(sink.displayName): \(m)"
    }

    /// Retries with backoff until connected, refused, out of attempts or stopping. The queue keeps
    /// filling meanwhile under the congestion policy, so memory stays within its byte cap.
    private func reconnectLoop() {
        // Closing the abandoned connection at once lets the server drop the old session as soon as
        // the path carries the FIN, so a later publish is less likely to meet "already publishing".
        sink.close()
        var attempt = 0
        var saidStale = false
        while !stopping.load(ordering: .acquiring) {
            attempt += 1
            if reconnect.maxAttempts > 0 && attempt > reconnect.maxAttempts {
                giveUp(after: reconnect.maxAttempts)
                return
            }
            let delay = reconnect.delay(attempt: attempt, unit: rng.nextUnit())
            onEvent?(.reconnecting(attempt: attempt, delaySeconds: delay))
            let wake = MediaTime.now() + Int64(delay * 1e9)
            while MediaTime.now() < wake {
                if stopping.load(ordering: .acquiring) { return }
                var ts = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                nanosleep(&ts, nil)
            }
            do {
                try reopen()
            } catch {
                // A stop cut this attempt short: the run ends while down (exit 4, with the
                // downtime), whatever the cut socket reported; never a refusal.
                if stopping.load(ordering: .acquiring) { return }
                let e = error
                failure.withLock { $0 = e }
                if e.isRefusal {
                    setState(.failed)
                    return
                }
                if case .streamNameInUse = e, !saidStale {
                    saidStale = true
                    onEvent?(.warning("\(sink.displayName): the server still holds the previous session of this stream "
                                      + "(a stale publisher from before the connection was lost) and answers 'already "
                                      + "publishing'; retrying within the backoff until it lets go"))
                }
                sink.close()
                continue
            }
            videoNeedsKeyframe = true
            onKeyframeNeeded?()
            failure.withLock { $0 = nil }
            stats.update { $0.reconnects += 1 }
            reconnectCount.add(1, ordering: .relaxed)
            setState(.live)
            onEvent?(.reconnected(count: stats.snapshot().reconnects))
            return
        }
    }

    /// Out of attempts: the failure names the outage (how long the destination has been down) and
    /// what the last attempt met, not that attempt's error alone ("could not connect" read as if
    /// the stream had never started).
    private func giveUp(after attempts: Int) {
        let down = downtimeSeconds
        let name = sink.displayName
        failure.withLock { f in
            var last = f?.description ?? "no answer"
            if let r = last.firstRange(of: "\(name): ") { last.removeSubrange(r) }
            f = .connectionLost("\(name): down for \(fixed(down, 1)) s, not back after \(attempts) reconnect "
                                + "attempt\(attempts == 1 ? "" : "s") (the last: \(last))")
        }
        setState(.failed)
    }

    /// The primary's delivery in the session's stats, in FLV tag-body bytes (what RTMP carries)
    /// whatever the destination's own framing, so every kind reports on one scale.
    private func account(_ packet: EncodedPacket) {
        let bytes = packet.accountedBytes
        stats.update { s in
            s.bytesSent += bytes
            switch packet.track {
            case .video:
                s.videoBytesSent += bytes
                if !packet.isConfig { s.videoFramesSent += 1 }
            case .audio:
                s.audioBytesSent += bytes
                if !packet.isConfig { s.audioFramesSent += 1 }
            case .data:
                break
            }
        }
    }

    /// Waits until the queue is sent: until `deadlineNs`; in block mode for as long as the sink
    /// makes progress (what the producer handed over is delivered, as a `GstBaseSink` renders
    /// everything before EOS), giving up only when it takes nothing for the block wait or goes down.
    private func drain(deadlineNs: Int64) -> Bool {
        guard let stall = blockWaitNs else { return queue.waitUntilDrained(deadlineNs: deadlineNs) }
        var sent = bytesSent
        var until = max(deadlineNs, MediaTime.now() + stall)
        while !queue.waitUntilDrained(deadlineNs: until) {
            let now = bytesSent
            guard state == .live, now != sent else { return false }
            sent = now
            until = MediaTime.now() + stall
        }
        return true
    }

    /// Lets the sender drain what is queued until `deadlineNs`, then closes the sink.
    package func finish(deadlineNs: Int64) {
        // A destination that is reconnecting cannot drain: do not hold the stop for it.
        let wasDown = state == .reconnecting
        let drained = !wasDown && drain(deadlineNs: deadlineNs)
        stopping.store(true, ordering: .releasing)
        // Past the deadline the sender may sit in a write on a stalled link: cut it short so
        // stopping stays within its bound.
        if !drained { sink.abortPendingIO() }
        queue.close()
        if state != .closed {
            // Anything still queued past the deadline is abandoned so close stays bounded.
            queue.removeAll()
        }
        thread.join()
        // Reconnecting now, whether it was at the start of the stop or the link failed during the
        // drain: the run ended while this destination was down.
        if state == .reconnecting { endedDown.store(true, ordering: .releasing) }
        sink.close()
        // A recording whose end did not reach the disk is a lost destination, never a clean close.
        if let e = (endpoint as? ClosingSink)?.closeFailure, state != .failed {
            failure.withLock { $0 = e }
            setState(.failed)
        }
        // A failed destination stays failed (its downtime counts to the end of the run).
        if state == .failed {
            let since = downSinceNs.exchange(0, ordering: .acquiringAndReleasing)
            if since > 0 { downAccumulatedNs.add(MediaTime.now() - since, ordering: .relaxed) }
        } else {
            setState(.closed)
        }
    }
}
