/// Adapts the x264 bitrate to what the network carries, settles there, and probes upward gently.
///
/// It follows one destination (`BitrateFollows`): the primary, or the slowest network publisher
/// that is live (the one with the longest queue this second). Once a second, from that
/// destination's send rate and queue:
/// - congested (more than `backlogMs` queued): the video the link carried (the rate it delivered, handed-over bytes less the growth of the transport's undelivered bytes, over the
///   last three congested seconds less audio) becomes the remembered ceiling, and the target drops to
///   `settleFraction` (85%) of it. A queue that is already draining at or below the rest level
///   is left to drain;
/// - calm (under 100 ms queued) for `calmSeconds`: below the rest level, `returnFraction` (90%)
///   of the ceiling, the target climbs back quickly (+25% a second, no higher). After
///   `probeIntervalSeconds` calm at rest it probes, as OBS's dynamic bitrate does: the target
///   goes to the ceiling, the level the link last carried, and no higher. A probe held calm for
///   an interval shows the link carries it: the ceiling rises by a step (3%, then 3x larger for
///   each probe held in a row: 9%, 27%, at most 50%) and the next probe goes there. A probe that
///   makes the queue grow (at least 100 ms and rising) or congests fails: the target returns to
///   rest under the re-measured ceiling, the step to 3%, and the next probe waits twice as long
///   (up to `maxProbeIntervalSeconds`).
///
/// The ceiling is never forgotten by time, so a link that stays slow is not re-flooded (the saw
/// of issue 22: 500-2500 kbps every 20 s under a steady 1200 kbit/s throttle). Under a steady
/// throttle the target rests at 90% of what the link carries, with ever rarer probes to it; a
/// link that recovers is climbed back within a few probe intervals.
package final class BitrateController: @unchecked Sendable {
    private let encoder: VideoEncoder
    private let destinations: [Destination]
    private let follows: BitrateFollows
    private let stats: BroadcastStats
    let targetKbps: Int
    let audioKbps: Int
    let floorKbps: Int
    let backlogMs = 300
    let calmSeconds = 2
    let probeIntervalSeconds = 4
    let maxProbeIntervalSeconds = 16
    let settleFraction = 0.85
    let returnFraction = 0.90
    private(set) var currentKbps: Int
    /// The video rate the link carried when last congested, raised by probes held calm; the
    /// target until the first congestion.
    private(set) var ceilingKbps: Int
    /// Calm seconds between probes, and a probe's test (doubled by each failed probe).
    private(set) var probeInterval: Int
    /// The target is a probe at the ceiling, not yet held calm for an interval.
    private(set) var probing = false
    /// Probes held in a row: each makes the next rise of the ceiling 3x larger.
    private var probesHeld = 0
    /// Bytes sent per destination at the previous tick, so the followed one may change between ticks.
    private var lastBytes: [Int]
    /// Undelivered bytes per destination at the previous tick (see `TagSink.undeliveredBytes`).
    private var lastUndelivered: [Int]
    private var lastNs: Int64 = 0
    private var lastBacklog = 0
    /// The send rates (kbit/s, audio included) of the last three congested seconds, newest
    /// last: one second's count is bursty (socket and path buffers fill and flush), three are the
    /// link; only congested seconds count, when the queue kept the link busy.
    private var congestedSent = (0, 0, 0)
    private var congestedSeconds = 0
    /// The previous second was congested too (one congestion episode).
    private var inEpisode = false
    private var calm = 0
    /// Calm seconds since the last change of the target.
    private var calmSinceChange = 0

    init(encoder: VideoEncoder, destinations: [Destination], follows: BitrateFollows, targetKbps: Int, audioKbps: Int,
         stats: BroadcastStats) {
        self.encoder = encoder
        self.destinations = destinations
        self.follows = follows
        lastBytes = Array(repeating: 0, count: destinations.count)
        lastUndelivered = Array(repeating: 0, count: destinations.count)
        self.targetKbps = targetKbps
        self.audioKbps = audioKbps
        self.stats = stats
        floorKbps = max(150, targetKbps / 8)
        currentKbps = targetKbps
        ceilingKbps = targetKbps
        probeInterval = probeIntervalSeconds
    }

    /// How much a held probe raises the ceiling: 3%, x3 for each probe held in a row before it, at most 50%.
    var ceilingStep: Double {
        var fraction = 0.03
        for _ in 0..<min(probesHeld, 3) { fraction *= 3 }
        return min(0.5, fraction)
    }

    /// The index of the destination followed this second.
    private func followed() -> Int {
        guard follows == .slowest else { return 0 }
        var pick = 0, longest = -1
        for (i, d) in destinations.enumerated() where d.sink.isNetworkPublisher && d.state == .live {
            let ms = d.backlogMs
            if ms > longest { longest = ms; pick = i }
        }
        return pick
    }

    func tick(nowNs: Int64) {
        guard !destinations.isEmpty else { return }
        let i = followed()
        let sent = destinations[i].bytesSent
        let before = lastBytes[i]
        let undelivered = destinations[i].sink.undeliveredBytes
        let undeliveredBefore = lastUndelivered[i]
        defer {
            for (j, d) in destinations.enumerated() {
                lastBytes[j] = d.bytesSent
                lastUndelivered[j] = j == i ? undelivered : d.sink.undeliveredBytes
            }
            lastNs = nowNs
        }
        guard lastNs > 0 else { return }
        let seconds = Double(nowNs - lastNs) / 1e9
        // What the link delivered: what was handed over, less what the transport's own buffers
        // took in (a filling TCP or SRT send buffer accepts more than the link carries).
        let delivered = max(0, (sent - before) - (undelivered - undeliveredBefore))
        let sentKbps = Int(Double(delivered) * 8 / 1000 / seconds)
        // The backlog includes what waits in the transport (SRT's unacknowledged data) and in
        // the kernel's send buffer (~128 KB: most of a second at 1 Mbit/s), so a link that is slightly over-driven shows at once, not once it is full.
        let unsent = (destinations[i].sink as? RTMPPublisher)?.unsentBytes ?? 0
        let kernelMs = unsent * 8 / max(1, currentKbps + audioKbps)
        adapt(sentKbps: sentKbps, backlogMs: destinations[i].backlogMs + kernelMs)
    }

    /// One second's decision from what the followed destination sent (`sentKbps`, audio
    /// included) and how much it holds queued (`backlogMs`).
    func adapt(sentKbps: Int, backlogMs backlog: Int) {
        let previous = lastBacklog
        lastBacklog = backlog
        let episodeContinues = inEpisode
        inEpisode = false
        if backlog > backlogMs || (probing && backlog >= 100 && backlog > previous) {
            congestedSent = (congestedSent.1, congestedSent.2, sentKbps)
            congestedSeconds += 1
            let window = min(3, congestedSeconds)
            let averageSent = (congestedSent.0 * (window >= 3 ? 1 : 0) + congestedSent.1 * (window >= 2 ? 1 : 0)
                               + congestedSent.2) / window
            let carried = min(targetKbps, max(floorKbps, averageSent - audioKbps))
            inEpisode = true
            calm = 0
            calmSinceChange = 0
            if probing {
                // The link carries no more than the rest level: back there, and probe less often.
                probing = false
                probesHeld = 0
                probeInterval = min(maxProbeIntervalSeconds, probeInterval * 2)
                ceilingKbps = min(ceilingKbps, carried)
                apply(restLevel)
                return
            }
            // Already at rest or below and the queue shrinks: let it drain.
            if backlog < previous && currentKbps <= restLevel { return }
            // What got through while the queue was full is what the link carries now (within
            // one episode the lowest estimate: the first seconds include a burst into buffers).
            ceilingKbps = episodeContinues ? min(ceilingKbps, carried) : carried
            probeInterval = probeIntervalSeconds
            probesHeld = 0
            let fit = max(floorKbps, Int(Double(ceilingKbps) * settleFraction))
            if fit < currentKbps * 95 / 100 { apply(fit) }
            return
        }
        guard backlog < 100 else {
            calm = 0
            return
        }
        calm += 1
        calmSinceChange += 1
        guard calm >= calmSeconds else { return }
        if probing {
            // A probe is judged after the base interval; only the wait before one is backed off.
            guard calmSinceChange >= probeIntervalSeconds else { return }
            probing = false
            probeInterval = probeIntervalSeconds
            // The probe held at the ceiling: the link carries it; raise it by a step and probe there.
            ceilingKbps = min(targetKbps, Int(Double(ceilingKbps) * (1 + ceilingStep)))
            probesHeld += 1
            if ceilingKbps > currentKbps {
                probing = true
                apply(ceilingKbps)
            }
            return
        }
        guard currentKbps < targetKbps else { return }
        if currentKbps < restLevel {
            apply(min(restLevel, currentKbps * 125 / 100 + 50))
        } else if calmSinceChange >= probeInterval {
            if ceilingKbps <= currentKbps { ceilingKbps = min(targetKbps, Int(Double(currentKbps) * (1 + ceilingStep))) }
            probing = true
            // To the ceiling: a ceiling measured in a burst fails this probe and is measured again.
            apply(ceilingKbps)
        }
    }

    /// Where the target rests below the ceiling between probes.
    private var restLevel: Int { max(floorKbps, Int(Double(ceilingKbps) * returnFraction)) }

    private func apply(_ kbps: Int) {
        currentKbps = kbps
        calmSinceChange = 0
        encoder.requestBitrate(kbps: kbps)
        stats.update { $0.targetVideoKbps = kbps }
    }
}
