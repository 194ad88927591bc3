import Testing
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// The retry schedule's contract (its doc comment): the first delay is `initialDelaySeconds`,
/// each next one `multiplier` times longer, capped at `maxDelaySeconds`, each scaled by a random
/// factor in 1 ± jitter; never below 0.1 s.
@Suite(.timeLimit(.minutes(2))) struct ReconnectPolicyTests {
    @Test func backoffGrowsByTheMultiplierUpToTheCap() {
        let p = ReconnectPolicy(maxAttempts: 0, initialDelaySeconds: 2, multiplier: 1.5, maxDelaySeconds: 30, jitter: 0.2)
        // unit 0.5 is the middle of the jitter range: the un-jittered schedule.
        var expected = 2.0
        for n in 1...40 {
            let d = p.delay(attempt: n, unit: 0.5)
            #expect(abs(d - min(expected, 30)) < 1e-9, "attempt \(n): \(d)")
            expected *= 1.5
        }
        #expect(p.delay(attempt: 1, unit: 0.5) == 2)
        #expect(p.delay(attempt: 8, unit: 0.5) == 30, "2 x 1.5^7 = 34 is capped")
        // Far past the cap (no overflow into infinity or NaN).
        #expect(p.delay(attempt: 5000, unit: 0.5) == 30)
    }

    @Test func jitterStaysWithinItsBounds() {
        let p = ReconnectPolicy.default
        var rng = SplitMixRandom(seed: 42)
        for n in 1...25 {
            let nominal = p.delay(attempt: n, unit: 0.5)
            let lo = nominal * (1 - p.jitter), hi = nominal * (1 + p.jitter)
            #expect(abs(p.delay(attempt: n, unit: 0) - lo) < 1e-9)
            #expect(p.delay(attempt: n, unit: 0.999_999) < hi && p.delay(attempt: n, unit: 0.999_999) > hi * 0.9999)
            var seenLow = false, seenHigh = false
            for _ in 0..<200 {
                let d = p.delay(attempt: n, unit: rng.nextUnit())
                #expect(d >= lo - 1e-9 && d < hi + 1e-9, "attempt \(n): \(d) outside [\(lo), \(hi))")
                if d < nominal { seenLow = true } else if d > nominal { seenHigh = true }
            }
            #expect(seenLow && seenHigh, "attempt \(n): the jitter spreads both ways")
        }
        // Without jitter every client waits the same.
        let flat = ReconnectPolicy(jitter: 0)
        #expect(flat.delay(attempt: 3, unit: 0) == flat.delay(attempt: 3, unit: 0.99))
    }

    @Test func neverRetriesFasterThanATenthOfASecond() {
        let p = ReconnectPolicy(initialDelaySeconds: 0.001, multiplier: 1, maxDelaySeconds: 0.001, jitter: 0.5)
        for n in 1...5 { #expect(p.delay(attempt: n, unit: 0) == 0.1) }
    }

    @Test func defaultsAreTheDocumentedSchedule() {
        let p = ReconnectPolicy.default
        #expect(p.initialDelaySeconds == 2 && p.multiplier == 1.5 && p.maxDelaySeconds == 30 && p.jitter == 0.2)
        #expect(p.maxAttempts == 20)
        #expect(ReconnectPolicy.never.maxAttempts < 0, "files never reconnect")
    }
}

/// A network sink whose connection can be broken on demand, and whose next opens can be made to fail.
/// Its state sits behind a pthread `ConditionLock`, not `Synchronization.Mutex`: TSan cannot see
/// Mutex's futex on Linux and would report every access from the sender thread as a race.
final class BreakableSink: PacketSink, @unchecked Sendable {
    private let lock = ConditionLock()
    private var breakNextWrite = false, opensToFail = 0, opens = 0, writeCount = 0
    var displayName: String { "rtmp://test.invalid/app" }
    var capabilities: DestinationCapabilities { DestinationCapabilities(isNetworkPublisher: true) }
    func open() throws(TransportError) {
        let fail = lock.withLock { () -> Bool in
            opens += 1
            if opensToFail > 0 { opensToFail -= 1; return true }
            return false
        }
        if fail { throw TransportError.connectFailed("refused by the test") }
    }
    func write(_ packet: EncodedPacket) throws(TransportError) {
        let fail = lock.withLock { () -> Bool in
            if breakNextWrite { breakNextWrite = false; return true }
            writeCount += 1
            return false
        }
        if fail { throw TransportError.writeFailed("broken by the test") }
    }
    func close() {}
    /// The next write fails; then `opensToFail` opens fail before one succeeds.
    func breakConnection(opensToFail n: Int) { lock.withLock { breakNextWrite = true; opensToFail = n } }
    var writes: Int { lock.withLock { writeCount } }
}

/// The destination's events, appended on its sender thread and read by the test (pthread lock, as above).
final class EventLog: @unchecked Sendable {
    private let lock = ConditionLock()
    private var events: [BroadcastEvent] = []
    func append(_ e: BroadcastEvent) { lock.withLock { events.append(e) } }
    var attempts: [(Int, Double)] {
        lock.withLock {
            events.compactMap { (e: BroadcastEvent) -> (Int, Double)? in
                if case .reconnecting(let a, let d) = e { return (a, d) }
                return nil
            }
        }
    }
    var reconnected: Int {
        lock.withLock {
            events.filter { (e: BroadcastEvent) -> Bool in
                if case .reconnected = e { return true }
                return false
            }.count
        }
    }
}

/// The schedule as a destination runs it: attempts count up through one outage and start again
/// from the first delay after a successful reconnect.
@Suite(.timeLimit(.minutes(2)), .serialized) struct ReconnectScheduleTests {
    static let fast = ReconnectPolicy(maxAttempts: 3, initialDelaySeconds: 0.1, multiplier: 2, maxDelaySeconds: 10, jitter: 0)

    func waitFor(_ what: () -> Bool) -> Bool {
        let deadline = MediaTime.now() + 10_000_000_000
        while MediaTime.now() < deadline {
            if what() { return true }
            usleep(10_000)
        }
        return what()
    }

    func push(_ d: Destination, _ ts: UInt32) {
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { body.deallocate() }
        body.initializeMemory(as: UInt8.self, repeating: 0x17)
        _ = d.queue.push(EncodedPacket.of(.video, timestampMs: Int64(ts), data: UnsafeRawBufferPointer(body), isKeyframe: true))
    }

    @Test func attemptsResetAfterASuccessfulReconnect() throws {
        let sink = BreakableSink()
        let log = EventLog()
        let d = Destination(sink: sink, policy: CongestionPolicy(), isPrimary: true, stats: BroadcastStats(), reconnect: Self.fast)
        d.onEvent = { log.append($0) }
        try d.open()
        push(d, 0)
        #expect(waitFor { sink.writes == 1 })
        // First outage: two failed opens, then back (attempts 1, 2, 3).
        sink.breakConnection(opensToFail: 2)
        push(d, 100)
        #expect(waitFor { log.reconnected == 1 && d.state == .live }, "reconnected after the third attempt")
        // Second outage: one failed open. The count starts again at 1, not at 4 (which would
        // also exceed maxAttempts 3 and give up).
        sink.breakConnection(opensToFail: 1)
        push(d, 200)
        #expect(waitFor { log.reconnected == 2 && d.state == .live })
        let attempts = log.attempts
        #expect(attempts.map(\.0) == [1, 2, 3, 1, 2], "\(attempts)")
        #expect(attempts.map(\.1) == [0.1, 0.2, 0.4, 0.1, 0.2], "\(attempts)")
        push(d, 300)
        #expect(waitFor { sink.writes == 2 }, "tags flow again after the second reconnect (the two that broke it are lost)")
        d.finish(deadlineNs: MediaTime.now() + 1_000_000_000)
        #expect(d.reconnects == 2)
    }

    @Test func givesUpAfterMaxAttempts() throws {
        let sink = BreakableSink()
        let log = EventLog()
        let d = Destination(sink: sink, policy: CongestionPolicy(), isPrimary: true, stats: BroadcastStats(), reconnect: Self.fast)
        d.onEvent = { log.append($0) }
        try d.open()
        sink.breakConnection(opensToFail: 100)
        push(d, 0)
        #expect(waitFor { d.state == .failed })
        #expect(log.attempts.map(\.0) == [1, 2, 3])
        #expect(log.reconnected == 0)
        d.finish(deadlineNs: MediaTime.now() + 1_000_000_000)
    }
}
