import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// A video encoder that only records the bitrates it is asked for.
final class BitrateRecordingEncoder: VideoEncoder, @unchecked Sendable {
    let settings: VideoEncoderSettings
    private(set) var requested: [Int] = []
    private let record = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
    var decoderConfigurationRecord: UnsafeRawBufferPointer { UnsafeRawBufferPointer(record) }
    init(kbps: Int) { settings = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: kbps) }
    deinit { record.deallocate() }
    func encode(_ picture: I420Frame, timestampMs: Int64, forceKeyframe: Bool, emit: (EncodedPacket) -> Void) -> Bool { true }
    func flush(emit: (EncodedPacket) -> Void) {}
    func requestBitrate(kbps: Int) { requested.append(kbps) }
}

/// The controller's contract (its doc comment): a backlog over `backlogMs` makes what the link
/// carried (the send rate less audio) the ceiling and drops the target to 85% of it, never below
/// the floor (target / 8, at least 150); calm, it returns quickly to rest (94% of the ceiling), goes to
/// the ceiling after a calm interval, and probes 2.5% above it only after holding it; under a
/// steady throttle (a simulated link) it settles, and it climbs back when the link recovers.
@Suite(.timeLimit(.minutes(1))) struct BitrateControllerTests {
    let target = 2500, audio = 128

    func controller(_ destinations: [Destination] = []) -> (BitrateController, BitrateRecordingEncoder, BroadcastStats) {
        let enc = BitrateRecordingEncoder(kbps: target)
        let stats = BroadcastStats()
        let c = BitrateController(encoder: enc, destinations: destinations, follows: .primary, targetKbps: target,
                                  audioKbps: audio, stats: stats)
        return (c, enc, stats)
    }

    @Test func backlogStepsDownTo85PercentOfWhatTheLinkCarried() {
        let (c, enc, stats) = controller()
        #expect(c.floorKbps == max(150, target / 8))
        c.adapt(sentKbps: 1200, backlogMs: 500)
        let want = Int(0.85 * Double(1200 - audio))
        #expect(c.ceilingKbps == 1200 - audio)
        #expect(c.currentKbps == want)
        #expect(enc.requested == [want], "the encoder is asked for the new rate")
        #expect(stats.snapshot().targetVideoKbps == want, "and the stats show it")
        // A backlog of exactly backlogMs is not congestion; 100..backlogMs holds the rate.
        c.adapt(sentKbps: 1200, backlogMs: c.backlogMs)
        c.adapt(sentKbps: 1200, backlogMs: 150)
        #expect(c.currentKbps == want)
        // A cut of less than 5% is not worth an encoder reconfiguration (a new episode: its first
        // second alone is the carried rate).
        c.adapt(sentKbps: 1190, backlogMs: 1000)
        #expect(c.currentKbps == want && enc.requested.count == 1)
        // A second congested second with a long queue: lower by enough to empty it in
        // `drainSeconds`, not under 70% of the ceiling.
        c.adapt(sentKbps: 1190, backlogMs: 2000)
        let ceiling = 1190 - audio
        let queued = 2000 * (want + audio) / 1000
        let drain = max(Int(c.lowestFitFraction * Double(ceiling)), ceiling - queued / c.drainSeconds)
        #expect(c.ceilingKbps == ceiling)
        #expect(drain < Int(0.85 * Double(ceiling)) && c.currentKbps == drain, "\(enc.requested)")
    }

    @Test func neverBelowTheFloorEvenWhenNothingGetsThrough() {
        let (c, enc, _) = controller()
        for sent in [0, 10, 100, 0] { c.adapt(sentKbps: sent, backlogMs: 5000) }
        #expect(c.currentKbps == c.floorKbps)
        #expect(enc.requested.allSatisfy { $0 >= c.floorKbps })
        #expect(enc.requested.first == c.floorKbps && enc.requested.count == 1, "no reconfiguration at the floor: \(enc.requested)")
    }

    /// Calm after one congested second: quick return to rest (94% of the ceiling); after a calm
    /// interval one step of 2.5% above the ceiling, and while the congestion is remembered only
    /// such steps, each held `rememberedHoldSeconds`, the third `recoveryHoldSeconds`; then one
    /// 3% step confirms it, the steps grow (27%), and a link that carries everything is climbed back.
    @Test func calmReturnsQuicklyThenProbesGentlyAboveTheCeiling() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 1200, backlogMs: 800)
        let ceiling = 1200 - audio
        #expect(c.failedKbps == target, "the level congestion struck is remembered")
        let low = c.currentKbps
        c.adapt(sentKbps: 1200, backlogMs: 0)
        #expect(c.currentKbps == low, "the first calm second only counts")
        var changes: [(second: Int, before: Int, after: Int)] = []
        for second in 0..<120 {
            let before = c.currentKbps
            c.adapt(sentKbps: before + audio, backlogMs: 0)
            if c.currentKbps != before { changes.append((second, before, c.currentKbps)) }
        }
        let rest = Int(Double(ceiling) * c.restFraction)
        let atRest = changes.firstIndex { $0.after == rest } ?? changes.count
        #expect(atRest <= 2 && changes.prefix(atRest + 1).allSatisfy { $0.second <= 2 }, "quick return to rest: \(changes)")
        let probes = Array(changes.dropFirst(atRest))
        #expect(probes.count >= 6, "\(changes)")
        guard probes.count >= 6 else { return }
        #expect(probes[1].after == Int(Double(ceiling) * 1.025) && probes[1].second - probes[0].second >= c.probeIntervalSeconds,
                "then one small step above the ceiling after a calm interval: \(changes)")
        // Small steps while the congestion is remembered, until the third in a row held 10 s:
        // the link recovered, larger steps follow.
        let small = Array(probes[1...c.recoveryStreak])
        for (a, b) in zip(small, small.dropFirst()) {
            #expect(b.after <= Int(Double(b.before) * 1.025) + 1, "only 2.5% steps while the failure is remembered: \(changes)")
            #expect(b.second - a.second >= c.rememberedHoldSeconds, "each held \(c.rememberedHoldSeconds) s: \(changes)")
        }
        let grown = probes[c.recoveryStreak + 1]
        #expect(grown.second - probes[c.recoveryStreak].second >= c.recoveryHoldSeconds, "the third held \(c.recoveryHoldSeconds) s: \(changes)")
        #expect(grown.after == Int(Double(grown.before) * (1 + c.confirmStep)), "then one 3% step: \(changes)")
        guard probes.count > c.recoveryStreak + 2 else { return }
        let large = probes[c.recoveryStreak + 2]
        #expect(large.second - grown.second >= c.rememberedHoldSeconds && large.after == min(target, Int(Double(large.before) * 1.5)),
                "held, then 50%: \(changes)")
        #expect(c.currentKbps == target, "a link that carries everything is climbed back: \(changes)")
    }

    /// Issue 22: probes go only up to what the link last carried. A probe above the ceiling that
    /// the link does not carry (the socket buffer takes the difference, no queue shows yet) fails
    /// after two seconds, and the ceiling stays what the link carried: no step past it.
    @Test func aProbeAboveTheCeilingThatTheLinkDoesNotCarryFails() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 1200, backlogMs: 800)
        let ceiling = c.ceilingKbps
        var levels: [Int] = []
        // Calm: rest, then the probe at the ceiling (carried in full), then 2.5% above it, of which
        // the link delivers only the ceiling.
        for _ in 0..<40 {
            let handed = c.currentKbps + audio
            c.adapt(sentKbps: min(handed, ceiling + audio), backlogMs: 20, handedKbps: handed)
            levels.append(c.currentKbps)
        }
        let above = Int(Double(ceiling) * 1.025)
        #expect(levels.contains(above), "\(levels)")
        #expect(levels.max() == above, "nothing past 2.5% above what the link carried: \(levels)")
        #expect(c.ceilingKbps <= ceiling + 1, "the ceiling stays what the link carried: \(c.ceilingKbps)")
        let run = levels.split { $0 != above }.map(\.count).max() ?? 0
        #expect(run <= 2, "the failing probe is judged within 2 s: \(levels)")
        #expect(c.probeInterval == c.maxProbeIntervalSeconds, "and the next waits the longest interval")
    }

    /// The old controller forgot the ceiling 20 s after the last congestion and re-flooded the link.
    @Test func theCeilingIsNotForgottenByTime() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 1200, backlogMs: 800)
        let held = (c.currentKbps, c.ceilingKbps)
        // 40 s of a half-full queue (neither calm nor congested) keep the rate and the ceiling.
        for _ in 0..<40 { c.adapt(sentKbps: 1200, backlogMs: 200) }
        #expect(c.currentKbps == held.0 && c.ceilingKbps == held.1)
        // Calm again: back to rest under the same ceiling, not towards the target.
        for _ in 0..<4 { c.adapt(sentKbps: c.currentKbps + audio, backlogMs: 0) }
        #expect(c.currentKbps == Int(Double(held.1) * c.restFraction))
    }

    @Test func atTheTargetNothingMoreIsAsked() {
        let (c, enc, _) = controller()
        for _ in 0..<20 { c.adapt(sentKbps: target + audio, backlogMs: 0) }
        #expect(enc.requested.isEmpty)
        #expect(c.currentKbps == target)
    }

    /// A link of `capacity` kbit/s fed by an encoder that makes the target plus audio on average,
    /// in 100 ms steps: a 2 s GOP whose keyframe carries 15% of its bits (so a link run at
    /// exactly its rate never empties its queue). The transport's own send buffer (a kernel
    /// socket buffer of `bufferKbit`) takes what the link cannot carry first, then the send queue
    /// holds the rest and drops video past 700 ms queued (the congestion policy).
    struct SimulatedLink {
        var capacityKbps: Double
        var bufferKbit = 1000.0
        var queuedKbit = 0.0
        var bufferedKbit = 0.0
        var handedKbitThisSecond = 0.0
        var sentKbitThisSecond = 0.0
        var framesProduced = 0
        var framesDropped = 0.0
        var steps = 0

        mutating func step(videoKbps: Int, audioKbps: Int) {
            let gop = Double(videoKbps) * 2
            let video = steps % 20 == 0 ? gop * 0.15 + gop * 0.85 / 20 : gop * 0.85 / 20
            steps += 1
            let produced = video + Double(audioKbps) / 10
            framesProduced += 3
            queuedKbit += produced
            let handed = min(queuedKbit, bufferKbit - bufferedKbit)
            queuedKbit -= handed
            bufferedKbit += handed
            handedKbitThisSecond += handed
            let sent = min(bufferedKbit, capacityKbps / 10)
            bufferedKbit -= sent
            sentKbitThisSecond += sent
            // Past 700 ms queued the send queue drops P-frames: the excess video is lost.
            let limit = 0.7 * Double(videoKbps + audioKbps)
            if queuedKbit > limit {
                let excess = queuedKbit - limit
                framesDropped += excess / (Double(max(1, videoKbps)) / 30)
                queuedKbit = limit
            }
        }

        /// The queue and the send buffer together, as the controller's tick sees them.
        func backlogMs(videoKbps: Int, audioKbps: Int) -> Int {
            Int((queuedKbit + bufferedKbit) / Double(videoKbps + audioKbps) * 1000)
        }
    }

    /// Runs `seconds` over a link of `capacity`; returns the target at each second, and drops
    /// per second.
    func simulate(_ c: BitrateController, link: inout SimulatedLink, seconds: Int) -> [(kbps: Int, drops: Double)] {
        var trace: [(Int, Double)] = []
        for _ in 0..<seconds {
            let dropsBefore = link.framesDropped
            for _ in 0..<10 { link.step(videoKbps: c.currentKbps, audioKbps: audio) }
            let sent = Int(link.sentKbitThisSecond), handed = Int(link.handedKbitThisSecond)
            link.sentKbitThisSecond = 0
            link.handedKbitThisSecond = 0
            c.adapt(sentKbps: sent, backlogMs: link.backlogMs(videoKbps: c.currentKbps, audioKbps: audio), handedKbps: handed)
            trace.append((c.currentKbps, link.framesDropped - dropsBefore))
        }
        return trace
    }

    /// Issue 22's figure: 2500 kbps over a steady 1200 kbit/s link. The target settles within
    /// 10 s at a level (its median from then on) of 70-95% of the link, stays within ±15% of that
    /// level, and drops stay under 1%.
    @Test(arguments: [1200.0, 800.0, 2000.0, 3000.0])
    func settlesUnderASteadyThrottle(capacity: Double) {
        let (c, _, _) = controller()
        var link = SimulatedLink(capacityKbps: capacity)
        let trace = simulate(c, link: &link, seconds: 300)
        let settled = trace.dropFirst(10)
        let rates = settled.map { Double($0.kbps) }
        let level = rates.sorted()[rates.count / 2]
        #expect(level >= 0.70 * capacity && level <= 0.95 * capacity,
                "settled at \(level), outside 70-95% of \(capacity): \(trace.map(\.kbps))")
        #expect(rates.allSatisfy { abs($0 - level) <= 0.15 * level }, "not within ±15% of \(level): \(trace.map(\.kbps))")
        let drops = settled.map(\.drops).reduce(0, +)
        #expect(drops <= 0.01 * Double(settled.count * 30), "\(drops) frames dropped once settled")
    }

    /// When the throttle lifts, the probes climb back to the target within 28 s (at most one
    /// backed-off interval, then growing steps).
    @Test func climbsBackWhenTheLinkRecovers() {
        let (c, _, _) = controller()
        var link = SimulatedLink(capacityKbps: 1200)
        _ = simulate(c, link: &link, seconds: 120)
        #expect(c.currentKbps < 1200)
        link.capacityKbps = 10_000
        let trace = simulate(c, link: &link, seconds: 60)
        let back = trace.firstIndex { $0.kbps == target }
        #expect(back.map { $0 <= 28 } == true, "\(trace.map(\.kbps))")
        #expect(trace.last?.kbps == target)
        let drops = trace.map(\.drops).reduce(0, +)
        #expect(drops == 0)
    }

    /// A throttled path as issue 22's soak meets it: the send queue, the transport's socket buffer
    /// (what it holds is visible: handed over, not delivered), then a path buffer the sender
    /// cannot see (a proxy's or router's; it hides a small excess for a few seconds) in front of
    /// a bottleneck of `capacityKbps`. The encoder makes exactly what it is asked, with a 2 s GOP
    /// whose keyframe carries 15% of its bits; the send queue drops video past 700 ms.
    struct ThrottledPath {
        var capacityKbps: Double
        /// The bottleneck's rate swings by this share of it, a triangle of 7 s (a shaper's
        /// scheduling, cross traffic), so what a congested second carried varies as in the soak.
        var wobble = 0.0
        var socketKbit = 1000.0
        /// 200 ms of the link.
        var pathKbit: Double { capacityKbps / 5 }
        var queued = 0.0, socket = 0.0, path = 0.0
        var handed = 0.0, delivered = 0.0
        var framesDropped = 0.0
        var steps = 0

        mutating func step(videoKbps: Int, audioKbps: Int) {
            let gop = Double(videoKbps) * 2
            queued += (steps % 20 == 0 ? gop * 0.15 : 0) + gop * 0.85 / 20 + Double(audioKbps) / 10
            steps += 1
            let toSocket = min(queued, socketKbit - socket)
            queued -= toSocket
            socket += toSocket
            handed += toSocket
            // The bottleneck forwards a tenth of its rate; the path buffer takes what it can of the rest.
            let phase = Double(steps % 70) / 35
            let rate = capacityKbps * (1 + wobble * (2 * (phase < 1 ? phase : 2 - phase) - 1))
            let waiting = max(0, path + socket - rate / 10)
            let socketAfter = max(0, waiting - pathKbit)
            delivered += socket - socketAfter
            path = waiting - socketAfter
            socket = socketAfter
            let limit = 0.7 * Double(videoKbps + audioKbps)
            if queued > limit {
                framesDropped += (queued - limit) / (Double(max(1, videoKbps)) / 30)
                queued = limit
            }
        }

        /// One second: the controller sees what was handed over, what left the socket buffer,
        /// and the queue plus the socket buffer; the path buffer is invisible to it.
        mutating func second(_ c: BitrateController, audioKbps: Int, peerEstimatedKbps: Int? = nil) -> Double {
            let dropsBefore = framesDropped
            for _ in 0..<10 { step(videoKbps: c.currentKbps, audioKbps: audioKbps) }
            let backlog = Int((queued + socket) / Double(c.currentKbps + audioKbps) * 1000)
            c.adapt(sentKbps: Int(delivered), backlogMs: backlog, handedKbps: Int(handed), peerEstimatedKbps: peerEstimatedKbps)
            handed = 0
            delivered = 0
            return framesDropped - dropsBefore
        }
    }

    /// Issue 22's target on every second, not most: 2500 kbps into a steady link, and from 10 s on
    /// every second's target is 70-95% of the link and within ±15% of the settled level (the
    /// median), over 300 s; drops stay under 1%.
    @Test(arguments: [600.0, 1200.0, 3000.0], [0.0, 0.05])
    func settlesOnEverySecondBehindAPathBuffer(capacity: Double, wobble: Double) {
        let (c, _, _) = controller()
        var path = ThrottledPath(capacityKbps: capacity, wobble: wobble)
        var trace: [Int] = [], drops = 0.0
        for s in 0..<300 {
            let d = path.second(c, audioKbps: audio)
            trace.append(c.currentKbps)
            if s >= 10 { drops += d }
        }
        let settled = trace.dropFirst(10).map(Double.init)
        let level = settled.sorted()[settled.count / 2]
        let outOfBand = settled.filter { $0 < 0.70 * capacity || $0 > 0.95 * capacity }
        let offLevel = settled.filter { abs($0 - level) > 0.15 * level }
        #expect(outOfBand.isEmpty, "\(outOfBand.count) s outside 70-95% of \(capacity): \(trace)")
        #expect(offLevel.isEmpty, "\(offLevel.count) s off ±15% of \(level): \(trace)")
        #expect(drops <= 0.01 * Double(settled.count * 30), "\(drops) frames dropped once settled")
    }

    /// CI (stop 51, SlowLinkTest): video only through a 1200 kbit/s link, a probe at 1214 held its
    /// 6 s, for 1-2% over the link hides in buffers under the 2% shortfall and the 100 ms queue;
    /// it became the ceiling, and rest stood at 1141, over 95% of the link. Here the link delivers
    /// at most 1195 kbit/s of video (1200 less FLV and RTMP framing), x264 lands 1.2% under the
    /// rate it is asked for, and what the link does not take waits in a queue the controller sees.
    /// From every congestion level, the ceiling a held probe raises stays at what the link
    /// delivered, and the settled level (the median, from 20 s on) stays under 95% of the link.
    @Test(arguments: [1150, 1155, 1160, 1165, 1170, 1175, 1180, 1185, 1190])
    func aHeldProbeRaisesTheCeilingOnlyAsFarAsTheLinkDelivered(congestedKbps: Int) {
        let enc = BitrateRecordingEncoder(kbps: target)
        let c = BitrateController(encoder: enc, destinations: [], follows: .primary, targetKbps: target, audioKbps: 0,
                                  stats: BroadcastStats())
        let link = 1195
        c.adapt(sentKbps: congestedKbps, backlogMs: 800)
        var queued = 0, trace: [Int] = [], ceilings: [Int] = []
        for _ in 0..<240 {
            let handed = c.currentKbps * 988 / 1000
            let delivered = min(link, handed + queued)
            queued += handed - delivered
            c.adapt(sentKbps: delivered, backlogMs: queued * 1000 / max(1, c.currentKbps), handedKbps: handed)
            trace.append(c.currentKbps)
            ceilings.append(c.ceilingKbps)
        }
        let settled = trace.dropFirst(20).sorted()
        let level = settled[settled.count / 2]
        #expect(ceilings.allSatisfy { $0 <= link }, "a ceiling over what the link delivered: \(ceilings.max() ?? 0) \(trace)")
        #expect(level * 100 <= 1200 * 95, "level \(level) over 95% of the link: \(trace)")
        // Issue 22: every settled second within ±15% of the level, probes included.
        #expect(settled.allSatisfy { abs($0 - level) * 100 <= level * 15 }, "off ±15% of \(level): \(trace)")
    }

    /// 45-minute soak at e4e2afa: a probe that failed put the ceiling at that second's count,
    /// and the rest fell to 782 under a link the ceiling 1047 had held calm. A failed probe now
    /// leaves the held ceiling, and the rest is 94% of it. (Old rule: rest at 94% of 900 - 128.)
    @Test func aFailedProbeLeavesTheHeldCeiling() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 1200, backlogMs: 800)
        var held = c.ceilingKbps
        for _ in 0..<60 where !c.probing || c.currentKbps <= c.ceilingKbps {
            c.adapt(sentKbps: c.currentKbps + audio, backlogMs: 0)
        }
        #expect(c.probing && c.currentKbps > c.ceilingKbps, "a probe above the ceiling: \(c.currentKbps)")
        held = c.ceilingKbps
        c.adapt(sentKbps: 900, backlogMs: 700)
        #expect(c.ceilingKbps == held, "the held ceiling stays")
        #expect(c.currentKbps == Int(Double(held) * c.restFraction), "rest under it: \(c.currentKbps)")
    }

    /// 45-minute soak at e4e2afa: the ceiling was the episode's lowest count (816 under a link
    /// that carried about 1050): one second counted low (bytes crossing a tick boundary) set it.
    /// The median of the window is the link, and one high second is not either; an episode never
    /// raises the ceiling it began with. (Old rule, the running minimum of the window's mean: 922
    /// after the 900 second.)
    @Test func aLowCountedSecondIsNotTheEpisodesCeiling() {
        let (c, _, _) = controller()
        for sent in [1400, 1200, 900, 1190, 1180] { c.adapt(sentKbps: sent, backlogMs: 800) }
        #expect(c.ceilingKbps == 1180 - audio, "the median of the last three, not 900's: \(c.ceilingKbps)")
        for sent in [1600, 1170] { c.adapt(sentKbps: sent, backlogMs: 800) }
        #expect(c.ceilingKbps == 1180 - audio, "nor one burst's: \(c.ceilingKbps)")
        c.adapt(sentKbps: 0, backlogMs: 0)
        for sent in [1500, 1500, 1500] { c.adapt(sentKbps: sent, backlogMs: 800) }
        #expect(c.ceilingKbps == 1180 - audio, "a congestion never raises the ceiling: \(c.ceilingKbps)")
    }

    /// WHIP: a receiver report's loss fraction describes packets sent at the earlier, higher rate,
    /// so counted against the seconds after a cut it makes the link look far slower (CI: 879 →
    /// 488 → 312 through a 1200 kbit/s link). What the receiver reports arrived, over the span
    /// its report covers, is the carried rate while congested; the lagged count is not.
    @Test func whatTheReceiverReportsArrivedIsTheCarriedRate() {
        let (c, _, _) = controller()
        c.adapt(sentKbps: 2600, backlogMs: 0, reportedKbps: 2580)
        // Congested: the count (handed less the old fraction's share) is low, the report is the link.
        c.adapt(sentKbps: 1400, backlogMs: 600, handedKbps: 2600, reportedKbps: 1150)
        #expect(c.ceilingKbps == 1150 - audio)
        // Lagged seconds after the cut: the old fraction times the new rate reads 400-500.
        for (count, reported) in [(480, 1120), (420, 1140), (450, 1130), (500, 1160)] {
            c.adapt(sentKbps: count, backlogMs: 600, handedKbps: 900, reportedKbps: reported)
        }
        #expect(c.ceilingKbps >= 1120 - audio, "the link's rate, not the lagged count's: \(c.ceilingKbps)")
        #expect(c.currentKbps >= Int(c.lowestFitFraction * Double(1120 - audio)), "no collapse: \(c.currentKbps)")
        // Without a report the count is all there is.
        let (d, _, _) = controller()
        d.adapt(sentKbps: 2600, backlogMs: 0)
        d.adapt(sentKbps: 1400, backlogMs: 600, handedKbps: 2600)
        #expect(d.ceilingKbps == 1400 - audio)
    }

    /// A lifted throttle is climbed back to the full target within 30 s, whatever the phase of
    /// the probes when it lifts (one lift per second of a 30 s window).
    @Test func climbsBackWithin30SecondsWhenTheThrottleLifts() {
        var worst = 0
        for lift in 90..<120 {
            let (c, _, _) = controller()
            var path = ThrottledPath(capacityKbps: 1200)
            for _ in 0..<lift { _ = path.second(c, audioKbps: audio) }
            path.capacityKbps = 10_000
            var trace: [Int] = []
            for _ in 0..<60 {
                _ = path.second(c, audioKbps: audio)
                trace.append(c.currentKbps)
            }
            let back = trace.firstIndex(of: target).map { $0 + 1 } ?? 61
            worst = max(worst, back)
            #expect(back <= 30, "lifted at \(lift) s, back at the target after \(back) s: \(trace)")
        }
        #expect(worst > 0)
    }

    /// A link that returns soon after the congestion that began its throttle: the level that
    /// congestion struck (the configured 2500) is remembered for 60 s, so the probes climb in
    /// small steps until three hold in a row, one 3% step confirms, then 50% steps; SlowLinkTest
    /// lifts its throttle 26 s after the onset (one run came back after 31 s, another was not
    /// back 30 s after the lift). The first congested second's count ranges from the link to 30%
    /// over it (a proxy's buffers filling); the lift comes 8-40 s after it. Back within 48 s.
    @Test func climbsBackWithin48SecondsWhenTheThrottleLiftsSoonAfterItsOnset() {
        var worst = 0
        for first in [1300, 1420, 1550] {
            for lift in stride(from: 8, through: 40, by: 2) {
                let (c, _, _) = controller()
                var path = ThrottledPath(capacityKbps: 1200)
                c.adapt(sentKbps: first, backlogMs: 800, handedKbps: target + audio)
                for _ in 0..<lift { _ = path.second(c, audioKbps: audio) }
                path.capacityKbps = 10_000
                var trace: [Int] = []
                for _ in 0..<80 {
                    _ = path.second(c, audioKbps: audio)
                    trace.append(c.currentKbps)
                }
                let back = trace.firstIndex(of: target).map { $0 + 1 } ?? 81
                worst = max(worst, back)
                #expect(back <= 48, "first count \(first), lifted after \(lift) s, back after \(back) s: \(trace)")
            }
        }
        #expect(worst > 30, "the case this test is for: \(worst) s")
    }

    /// The receiver's estimate (REMB) bounds the ceiling and every probe: the target stays at
    /// or under the estimate less audio, never below the floor, and follows a rising estimate up.
    @Test func theReceiversEstimateBoundsTheProbes() {
        let (c, _, _) = controller()
        var path = ThrottledPath(capacityKbps: 10_000)
        // An estimate under the target alone does not push it down (a delay-based estimate falls
        // while a bottleneck drains; loss and queues bring the target down).
        for _ in 0..<30 { _ = path.second(c, audioKbps: audio, peerEstimatedKbps: 1000) }
        #expect(c.currentKbps == target)
        // A slow link brings it down; then the link recovers, and the probes climb to the
        // estimate and no further.
        var slow = ThrottledPath(capacityKbps: 800)
        for _ in 0..<30 { _ = slow.second(c, audioKbps: audio, peerEstimatedKbps: 2000) }
        #expect(c.currentKbps < 800)
        var trace: [Int] = []
        for _ in 0..<150 {
            _ = path.second(c, audioKbps: audio, peerEstimatedKbps: 2000)
            trace.append(c.currentKbps)
        }
        #expect(trace.max()! <= 2000 - audio, "\(trace)")
        #expect(trace.max()! >= Int(0.85 * Double(2000 - audio)), "the probes climb to the estimate: \(trace)")
        // No estimate any more: back to the full target.
        for _ in 0..<60 { _ = path.second(c, audioKbps: audio) }
        #expect(c.currentKbps == target)
    }

    /// The once-a-second tick reads the followed destination's queue and byte count: a destination
    /// whose queue holds a second of video and that sent nothing is congested to the floor.
    @Test func tickReadsTheDestinationsQueue() {
        let stats = BroadcastStats()
        let d = Destination(sink: DiscardSink(), policy: CongestionPolicy(dropPFramesAfterMs: 10_000, dropAllVideoAfterMs: 20_000),
                            isPrimary: true, stats: stats)
        let body = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 1)
        body.initializeMemory(as: UInt8.self, repeating: 0x17)
        defer { body.deallocate() }
        for ts in stride(from: 0, through: 1000, by: 100) {
            _ = d.queue.push(EncodedPacket.of(.video, timestampMs: Int64(UInt32(ts)), data: UnsafeRawBufferPointer(body), isKeyframe: true))
        }
        #expect(d.queue.queuedDurationMs >= 900)
        let (c, enc, _) = controller([d])
        c.tick(nowNs: 1_000_000_000)                // the first tick only takes the reference
        #expect(enc.requested.isEmpty)
        c.tick(nowNs: 2_000_000_000)
        #expect(enc.requested == [c.floorKbps])
    }
}
