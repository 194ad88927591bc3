import BroadcastCore

/// Adapts the x264 bitrate to what the network carries, settles there, and probes upward gently.
///
/// It follows one destination (`BitrateFollows`): the primary, or the slowest network publisher
/// that is live (the one with the longest queue this second). Once a second, from that
/// destination's send rate and queue:
/// - congested (more than `backlogMs` queued): the video the link carried (the rate it delivered:
///   what the receiver reports arrived over its report's span, `LinkFeedback.deliveredKbps`, when the
///   transport learns it (WHIP); else handed-over bytes less the growth of the transport's
///   undelivered bytes (RTMP: the kernel's unsent ones and the peer's unread ones,
///   `PeerReadBacklog`); less audio; the
///   first second of an episode alone, then the median of the last three seconds without it,
///   since the first includes what path buffers took in) sets the ceiling, never above the
///   ceiling the episode began with (a congestion never raises it: only held probes do; one
///   second's count is high or low by what crossed a tick boundary, not by the link),
///   and the target drops to
///   `settleFraction` (85%) of it, or (from the episode's second second) lower by as much as
///   empties the queue in `drainSeconds`
///   (never under `lowestFitFraction`, 70%, of it, nor under the floor). The level congestion
///   struck is remembered as failed. A queue that
///   is already draining at or below the rest level is left to drain;
/// - calm (under 100 ms queued) for `calmSeconds`: below the rest level, `restFraction` (94% of
///   the ceiling the path's queue measured, 90% of one the byte counts measured), the target climbs back quickly (+25% a second, no higher). After
///   `probeIntervalSeconds` calm at rest it probes.
///
/// Probes (as OBS's dynamic bitrate does, upward only to what the link has shown it carries):
/// - a probe fails when the queue grows (at least 100 ms and rising), congests, or when the link
///   delivered 2% less than was handed over (the socket buffer took the rest); the target
///   returns to rest under the ceiling the link last carried (the held ceiling stays: the probe
///   failed, not it), and the probe's level is remembered as failed (`failedKbps`);
/// - while a failed level is remembered (`failureMemorySeconds`, 60 s since the last failure):
///   each probe is one step of 2.5% above the ceiling and never above the failed level, and must
///   hold `rememberedHoldSeconds` (6 s) to raise the ceiling, and raises it only as far as the
///   link delivered over the hold, its first second left out (a probe 1-2% over the link hides its
///   excess in buffers for the whole hold); one the link delivered no more of than the ceiling
///   failed. A probe at the failed level must
///   hold `recoveryHoldSeconds` (10 s: longer than a path buffer of 200 ms hides a 2.5% excess);
///   held, the link carries what it did not: it recovered, the failure is forgotten and the next
///   steps are 27%, then 50%. A third small probe held in a row (`recoveryStreak`; it too must
///   hold 10 s) shows a recovered link or a ceiling measured low (real runs measured it 7-14%
///   under the link): one probe `confirmStep` (3%) above it, held 6 s, tells them apart before
///   the 50% steps; failing, its level is remembered like any failed probe. So under a steady throttle the probes stay within one small step of what the
///   link carried (a path's buffers can hide such a step for seconds, not a larger one);
/// - with no failure remembered: first to the ceiling, then 2.5% above it twice, then 9%, 27%
///   and 50% for a link that carries those.
/// - a failed probe's own loss repair (`probeRepairSeconds`) counts no lower than the ceiling
///   it stood on: seconds of it are not the link.
///
/// The receiver's estimate (`LinkFeedback.peerEstimatedKbps`, WebRTC REMB), when the followed
/// destination gives one, less audio and never under the floor, bounds every probe; it never
/// pushes the target down (loss and queues do that).
///
/// The ceiling is never forgotten by time, so a link that stays slow is not re-flooded (the saw
/// of issue 22: 500-2500 kbps every 20 s under a steady 1200 kbit/s throttle; then a +9% probe
/// every 25 s past the link). Under a steady throttle the target rests at 90-94% of what the link
/// carries and probes at most one 2.5% step above it, so it stays within 15% of its level and,
/// when audio is at least ~7% of the link (a probe above the video the link carries is then
/// still under 95% of the link), within 70-95% of the link every second; a link that recovers is back at the target within about 30 s
/// (one rest, one 10 s hold, then 50% steps), or 48 s when it recovers within 40 s of the
/// congestion that began the throttle (that level is remembered: small steps, a 3% confirmation,
/// then 50% steps).
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
    let probeIntervalSeconds = 12
    let maxProbeIntervalSeconds = 12
    /// Calm seconds a probe must hold to count.
    let probeHoldSeconds = 3
    /// A probe above the ceiling fails when the link delivered this much less than was handed over.
    let carriedShortfallPercent = 2
    /// How long a failed probe's level bounds the probes (a link that recovers shows itself
    /// sooner: a probe held at that level forgets it).
    let failureMemorySeconds = 60
    /// Calm seconds a probe above the ceiling must hold while a failure is remembered: long enough
    /// that a path buffer cannot hide a 2.5% excess of a link of 600 kbit/s or more.
    let rememberedHoldSeconds = 6
    /// Calm seconds a probe at the failed level must hold to show the link recovered: longer than
    /// a path buffer of 200 ms hides a 2.5% excess.
    let recoveryHoldSeconds = 10
    /// Held probes counted once a failed level is carried: the next step is 27%, then 50%.
    let recoveredProbesHeld = 3
    /// Held probes counted once the confirming step holds: the next step is 50%.
    let confirmedProbesHeld = 4
    /// Small probes held in a row (the last one `recoveryHoldSeconds`) that show a recovered link
    /// while a failure is remembered: a ceiling measured low is found in as many steps.
    let recoveryStreak = 3
    /// The step that confirms a recovery after `recoveryStreak`, held `rememberedHoldSeconds`:
    /// within 15% of rest (1.03 / `byteCountReturnFraction` 0.90 = 1.144; the 5% it was stood
    /// 16.7% over rest in the 45-minute soak once rest was 90%), and under 95% of a 1200 kbit/s
    /// link with 128 kbit/s of audio over a ceiling 7% low.
    let confirmStep = 0.03
    let settleFraction = 0.85
    /// Congested, the target leaves the link room to empty the queue in this many seconds.
    let drainSeconds = 5
    /// ...but never under this share of it (no collapse: SRT's carried estimate can be half the
    /// link, and SRTCongestionTests wants the target over 30% of it).
    let lowestFitFraction = 0.7
    let returnFraction = 0.94
    /// Rest when the byte counts measured the ceiling (no queue before the reader: SRT, WHIP, a
    /// proxy): they read up to ~3% over the link (what crossed a tick, what a peer's buffers took
    /// in: 1214, 1231 and 1237 through a 1200 kbit/s proxy of video alone, in CI and rehearsals),
    /// and 94% of that stood over 95% of the link (92% of 1237 is 94.8% of it). The path's
    /// acknowledged rate, averaged over seconds, reads under the link: rest at 94% of it stood at
    /// 0.79-0.84 of a 1200 kbit/s tbf in rehearsals R34 and R35.
    let byteCountReturnFraction = 0.90
    private(set) var currentKbps: Int
    /// The video rate the link carried when last congested, raised by probes held calm; the
    /// target until the first congestion.
    private(set) var ceilingKbps: Int
    /// Calm seconds between probes, and a probe's test (doubled by each failed probe).
    private(set) var probeInterval: Int
    /// The target is a probe at the ceiling, not yet held calm for an interval.
    private(set) var probing = false
    /// Small probes kept holding: the next, `confirmStep` above the ceiling, must hold too before
    /// the large steps (a ceiling measured low is found by small probes that hold as well).
    private var confirming = false
    /// Probes above the ceiling held in a row: each makes the next step 3x larger.
    private var probesHeld = 0
    /// What the current probe handed over and what the link delivered (kbit/s summed per second).
    private var probeHanded = 0
    /// What the current probe handed over in its last second (kbit/s).
    private var probeLastHanded = 0
    private var probeDelivered = 0
    private var probeSeconds = 0
    /// What the link delivered in the probe's first second (kbit/s): x264 takes about a second to
    /// reach a new rate, so that second does not measure the level.
    private var probeFirstDelivered = 0
    /// The level of the last probe that failed (or the level congestion struck): a level the link
    /// did not carry. While it is remembered probes stay at or under it, in small steps only.
    private(set) var failedKbps: Int?
    /// Seconds since `failedKbps` was set.
    private var secondsSinceFailure = 0
    /// The receiver's estimate less audio (see `LinkFeedback.peerEstimatedKbps`), when the followed
    /// destination gives one: every probe stays at or under it.
    private(set) var peerCapKbps: Int?
    /// Bytes sent per destination at the previous tick, so the followed one may change between ticks.
    private var lastBytes: [Int]
    /// Undelivered bytes per destination at the previous tick (see `LinkFeedback.undeliveredBytes`).
    private var lastUndelivered: [Int]
    private var lastNs: Int64 = 0
    private var lastBacklog = 0
    /// The send rates (kbit/s, audio included) of the last three congested seconds, newest
    /// last: one second's count is bursty (socket and path buffers fill and flush), three are the
    /// link; only congested seconds count, when the queue kept the link busy.
    private var congestedSent = (0, 0, 0)
    private var congestedSeconds = 0
    /// The ceiling when this congestion episode began: the episode's seconds may lower it, and
    /// a later, better-counted second of the same episode raises it back as far as this, no further.
    private var episodeBaseKbps = 0
    /// Congested seconds in a row.
    private var episodeSeconds = 0
    /// The last congested second's count that was not a stall (kbit/s), and whether the last
    /// congested second was one.
    private var lastCongestedKbps = 0
    private var lastSecondStalled = false
    /// The previous second was congested too (one congestion episode).
    private var inEpisode = false
    private var calm = 0
    /// Calm seconds since the last change of the target.
    private var calmSinceChange = 0
    /// Queueing (RTT over the lowest RTT) of a congested second from which the bottleneck is in
    /// the path (`PathSample`): above what delayed ACKs add to a loopback's RTT (40-200 ms).
    let pathQueueMs = 250
    /// A congested second with less queueing than this shows no queue in the path.
    let noPathQueueMs = 20
    /// A probe fails once the path's queue adds this much to the RTT (a probe 20% over a
    /// 1200 kbit/s link adds ~90 ms a second).
    let pathProbeFailMs = 60
    /// With the bottleneck in the path: calm seconds at rest between probes, the probe's step
    /// over the ceiling (5%: with the audio on top that is already over the link, which the
    /// kernel sees at once as a full path, while the video target stays under 95% of the link),
    /// and the step once a probe held (50%: a link that returned is climbed back in seconds).
    let pathProbeIntervalSeconds = 3
    /// A probe fails when the kernel measured the full path at under this much over its rate.
    let pathFullMarginPercent = 5
    /// A probe through the path holds only when at least this share of its rate was sent.
    let probeFilledPercent = 85
    let pathProbeStep = 0.05
    let pathClimbStep = 0.5
    /// The steps after one and two held probes: a held 5% probe may only show a ceiling measured
    /// low (25% over it fails within a second under a throttle); a 25% step held is a link that
    /// returned, and 50% steps follow. (10% first cost the 500 ms tbf run 11 s to recover.)
    let pathClimbSteps = (0.25, 0.5)
    /// What the peer acknowledged (kbit/s summed over seconds) in the current episode's congested
    /// seconds with the bottleneck in the path, the episode's first second left out, and how many
    /// seconds the sum holds: at most `pathAckedWindow`, older seconds fading out of it.
    private var pathAckedSum = 0
    private var pathAckedSeconds = 0
    /// Seconds the path's acknowledged rate is averaged over: a loss repair's seconds read low,
    /// and the cumulative acknowledgement that ends it high (681 and 1526 through a 1200 kbit/s
    /// tbf), so three seconds put the ceiling 6% over what the link carries for us; the episode's
    /// whole length is the link.
    let pathAckedWindow = 6
    /// The video rate the path carried in the last congestion through it (`pathAckedSum`'s mean less
    /// audio): held probes climb back up to it in large steps, no further. Forgotten once a probe
    /// at it holds.
    private(set) var pathMeasuredKbps: Int?
    /// Probes held in a row through the path (a failure or a congestion resets it).
    private var pathHeld = 0
    /// Seconds after a failed probe in which a congested second counts no lower than the ceiling
    /// the probe stood on (it held calm: the link carried it); the cut still drains the queue
    /// (`settleFraction`, `drainSeconds`). The probe's own loss repair reads low: delivery-rate
    /// samples of 55-65% of a 1200 kbit/s link in the seconds after a failed probe
    /// (tools/bitrate_shaped.py), and in a CI run one second near nothing (TCP's retransmission
    /// timeout after a tail-drop queue's losses), which alone put the ceiling, and the target,
    /// at the floor (1160 probe, 872 rest, then 312). A link that did slow down keeps the queue
    /// up past these seconds and is followed then.
    let probeRepairSeconds = 3
    /// Seconds since the last probe failed (saturates).
    private var secondsSinceProbeFailed = Int.max / 2
    /// The last congestion showed as a queue before the reader (`PathSample.queueMs`): RTT growth
    /// (the bottleneck is before the TCP peer) or the peer's unread bytes (a far end that reads
    /// slowly). The queue then shows at once whether a probe fits, and what the peer's reader
    /// took measures the bottleneck. (A slow reader on a kernel that does not report the window
    /// never shows so: its seconds keep the byte counts and the slow probes.)
    private(set) var bottleneckInPath = false
    /// The followed destination's TCP_INFO at the previous tick, and which destination it was.
    private var lastLink: TCPLinkInfo?
    private var lastLinkIndex = -1
    /// What the followed TCP peer holds unread (`PeerReadBacklog`), and at the previous tick.
    private var peerUnread = PeerReadBacklog()
    private var lastUnread = 0
    /// Unread bytes a peer that keeps up holds at a tick (nginx-rtmp: 1-8 KB): not a queue.
    let peerNoiseBytes = 12_288
    /// Between ticks, while a probe through the path is on, its queue is read this often
    /// (`watch(nowNs:)`)...
    let probeWatchIntervalNs: Int64 = 100_000_000
    /// ...and the probe fails once `probeWatchReadings` readings in a row each find it at
    /// `probeWatchLevelMs` or more and grown by `probeWatchGrowthMs`, or the path measured full;
    /// or once three in a row at that level are each higher than the one before and
    /// `probeWatchGrowthMs` over the first. A keyframe is handed over at once and its queue then
    /// only shrinks (21 KB in our socket, then 66-168 ms in the path for 200-300 ms through a
    /// 1200 kbit/s tbf); a probe over the link keeps it growing: 14, 52, 102, 215 ms at 100 ms steps
    /// for a 25% probe, once x264 had reached its rate (about half a second). A probe a few
    /// percent over the link grows a few ms a reading on top of a keyframe it did not let drain
    /// (9, 46, 49, 58, 93, 113 for 1137 kbps through a 1200 kbit/s tbf): the pair's rule alone
    /// left it standing 1034 ms; the three rising readings fail it at 825.
    let probeWatchReadings = 2
    let probeWatchLevelMs = 40
    let probeWatchGrowthMs = 10
    /// The monotonic time of the current tick or watch reading (0 when driven through `adapt`).
    private var clockNs: Int64 = 0
    /// When the current probe began, the last watch reading, its queue (ms; nil: none yet in this
    /// probe), and readings in a row that failed the probe.
    private var probeStartNs: Int64 = 0
    private var watchNs: Int64 = 0
    private var watchQueueMs: Int?
    private var watchQueueBeforeMs: Int?
    private var watchOver = 0
    /// A climb back to rest through the path is on, from this level (set by the step, cleared at
    /// the next tick): the watch reads it as it reads a probe. After a drain, rest can stand over
    /// the link (a ceiling the episode's first seconds read high: 1316 through a 1150 kbit/s
    /// link for 2 s, then a congestion, in the bench).
    private var climbFromKbps: Int?

    package init(encoder: VideoEncoder, destinations: [Destination], follows: BitrateFollows, targetKbps: Int, audioKbps: Int,
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

    /// How far the next probe goes above the held ceiling: two steps of 2.5% first (what a path's
    /// buffers can hide for a few seconds; the rest level stays within 15% of them), then 9%,
    /// 27% and 50% for a link that carried those.
    var ceilingStep: Double {
        if failedKbps != nil { return 0.025 }
        switch probesHeld {
        case 0, 1: return 0.025
        case 2: return 0.09
        case 3: return 0.27
        default: return 0.5
        }
    }

    /// Calm seconds the current probe must hold: the ceiling is a level the link carried (a short
    /// check); the second small step, the last before larger ones, is held longest.
    private var holdSeconds: Int {
        guard currentKbps > ceilingKbps else { return calmSeconds }
        if confirming { return rememberedHoldSeconds }
        if let failed = failedKbps {
            return currentKbps >= failed || probesHeld + 1 >= recoveryStreak ? recoveryHoldSeconds : rememberedHoldSeconds
        }
        return probesHeld == 1 ? probeHoldSeconds + 1 : probeHoldSeconds
    }

    /// The index of the destination followed this second.
    private func followed() -> Int {
        guard follows == .slowest else { return 0 }
        var pick = 0, longest = -1
        for (i, d) in destinations.enumerated() where d.capabilities.isNetworkPublisher && d.state == .live {
            let ms = d.backlogMs
            if ms > longest { longest = ms; pick = i }
        }
        return pick
    }

    package func tick(nowNs: Int64) {
        guard !destinations.isEmpty else { return }
        clockNs = nowNs
        let i = followed()
        let sent = destinations[i].bytesSent
        let before = lastBytes[i]
        // The kernel's view of the path (one getsockopt a second): what the peer acknowledged,
        // the share of the second data was in flight, RTT growth, its delivery-rate sample, and
        // the window the peer advertises.
        let tcp = destinations[i].tcpPath
        let link = tcp?.linkInfo
        // What the peer acknowledged but has not read counts as undelivered and queued, like our
        // own send buffer: what it took is then what it reads, and a probe over that fails.
        let unread = peerUnread.unread(link, source: i)
        let undelivered = (destinations[i].feedback?.undeliveredBytes ?? 0) + unread
        let undeliveredBefore = lastUndelivered[i]
        defer {
            for (j, d) in destinations.enumerated() {
                lastBytes[j] = d.bytesSent
                lastUndelivered[j] = j == i ? undelivered : (d.feedback?.undeliveredBytes ?? 0)
            }
            lastNs = nowNs
        }
        guard lastNs > 0 else { return }
        let seconds = Double(nowNs - lastNs) / 1e9
        // What the link delivered: what was handed over, less what the transport's own buffers
        // took in (a filling TCP or SRT send buffer accepts more than the link carries).
        let delivered = max(0, (sent - before) - (undelivered - undeliveredBefore))
        let sentKbps = Int(Double(delivered) * 8 / 1000 / seconds)
        let handedKbps = Int(Double(max(0, sent - before)) * 8 / 1000 / seconds)
        // The backlog includes what waits in the transport (SRT's unacknowledged data), in the
        // kernel's send buffer (~128 KB: most of a second at 1 Mbit/s) and unread at the TCP peer,
        // so a link that is slightly over-driven shows at once, not once it is full.
        let unsent = (tcp?.unsentBytes ?? 0) + unread
        let kernelMs = unsent * 8 / max(1, currentKbps + audioKbps)
        var path: PathSample?
        if let a = lastLink, let b = link, lastLinkIndex == i, var p = PathSample(from: a, to: b, seconds: seconds) {
            // The peer's unread bytes are a queue before its reader, as the path's is before the
            // link; what its reader took is what it acknowledged less what it took in unread.
            p.peerUnreadMs = unreadMs(unread)
            p.ackedKbps = max(0, p.ackedKbps - Int(Double(unread - lastUnread) * 8 / 1000 / seconds))
            path = p
        }
        lastUnread = unread
        lastLink = link
        lastLinkIndex = i
        adapt(sentKbps: sentKbps, backlogMs: destinations[i].backlogMs + kernelMs, handedKbps: handedKbps,
              peerEstimatedKbps: destinations[i].feedback?.peerEstimatedKbps, reportedKbps: destinations[i].feedback?.deliveredKbps,
              path: path)
    }

    /// Between ticks (the housekeeper calls it every 20 ms; it returns at once unless a probe
    /// through the path is on): every `probeWatchIntervalNs` reads all that is queued before the
    /// followed peer's reader (our send queue, the kernel's unsent bytes, the path's RTT growth,
    /// the peer's unread bytes) and the kernel's delivery-rate sample, so that a probe over the
    /// link fails as soon as that shows, not at the next tick: the issue allows a failed probe
    /// less than a second above the link.
    package func watch(nowNs: Int64) {
        guard probing || climbFromKbps != nil, bottleneckInPath, lastLinkIndex >= 0, lastLinkIndex < destinations.count,
              nowNs - watchNs >= probeWatchIntervalNs else { return }
        let d = destinations[lastLinkIndex]
        guard let tcp = d.tcpPath, let link = tcp.linkInfo else { return }
        let unread = peerUnread.unread(link, source: lastLinkIndex)
        let ours = d.backlogMs + tcp.unsentBytes * 8 / max(1, currentKbps + audioKbps)
        watchReading(queueMs: ours + link.queueingMs + unreadMs(unread), deliveryKbps: link.deliveryKbps, nowNs: nowNs)
    }

    /// One reading of the watch (`watch(nowNs:)`): `queueMs` queued before the peer's reader, and
    /// the kernel's latest delivery-rate sample (nil: app-limited). A queue that grows, or the
    /// path measured full at no more than the probe sends (over the link), as
    /// `probeWatchReadings` describes, fails the probe now: back to rest, the ceiling kept, as the
    /// tick's path rule does.
    /// A climb step to rest that fails so shows the ceiling over the link: the level it climbed
    /// from becomes the ceiling, and the target rests under it.
    func watchReading(queueMs: Int, deliveryKbps: Int?, nowNs: Int64) {
        guard probing || climbFromKbps != nil, bottleneckInPath else { return }
        clockNs = nowNs
        watchNs = nowNs
        // A reading over the link: at the level and grown 10 ms since the last, or the path
        // measured full; `probeWatchReadings` of them in a row fail the probe (a fast probe). So
        // do three readings at the level that keep rising, 10 ms across them, on top of a jump
        // they did not let drain (a probe just over the link).
        let level = probeWatchLevelMs, growth = probeWatchGrowthMs
        let grown = watchQueueMs.map { queueMs >= level && queueMs - $0 >= growth } ?? false
        var rising = false
        if let last = watchQueueMs, let before = watchQueueBeforeMs {
            rising = before >= level && last > before && queueMs > last && queueMs - before >= growth
        }
        watchQueueBeforeMs = watchQueueMs
        watchQueueMs = queueMs
        watchOver = grown || pathFull(deliveryKbps) ? watchOver + 1 : 0
        guard rising || watchOver >= probeWatchReadings else { return }
        pathHeld = 0
        if !probing, let from = climbFromKbps {
            ceilingKbps = from
            climbFromKbps = nil
        }
        endProbe(failed: true)
        calm = 0
        apply(restLevel)
    }

    /// One second's decision from what the followed destination delivered (`sentKbps`, audio
    /// included), what was handed over to its transport (`handedKbps`; nil: all of it was
    /// delivered), how much it holds queued (`backlogMs`) and the receiver's estimate of the
    /// path (`peerEstimatedKbps`, audio included; nil: none) and what the receiver reports it
    /// received (`reportedKbps`, audio included, over the span of its latest report; nil: the
    /// transport does not learn it).
    /// `path`: the kernel's view of the path over the second (TCP transports; nil: none).
    func adapt(sentKbps: Int, backlogMs backlog: Int, handedKbps: Int? = nil, peerEstimatedKbps: Int? = nil,
               reportedKbps: Int? = nil, path: PathSample? = nil) {
        if failedKbps != nil {
            secondsSinceFailure += 1
            if secondsSinceFailure >= failureMemorySeconds { failedKbps = nil }
        }
        // The receiver's estimate bounds every probe (`probeLimit`), never the way down: aiortc's
        // delay-based estimate falls to about half the link while a bottleneck's queue drains, and
        // following it down on top of the loss rule put the target at the floor (312 kbps through
        // a 1200 kbit/s link in CI); loss and queues already bring the target down.
        peerCapKbps = peerEstimatedKbps.map { max(floorKbps, min(targetKbps, $0 - audioKbps)) }
        secondsSinceProbeFailed = min(secondsSinceProbeFailed + 1, Int.max / 2)
        climbFromKbps = nil
        let previous = lastBacklog
        lastBacklog = backlog
        let episodeContinues = inEpisode
        inEpisode = false
        if probing {
            probeLastHanded = handedKbps ?? sentKbps
            probeHanded += handedKbps ?? sentKbps
            probeDelivered += sentKbps
            if probeSeconds == 0 { probeFirstDelivered = sentKbps }
            probeSeconds += 1
        }
        // A probe fails on a growing queue of ours, unless the path shows it empty (no queueing)
        // and the kernel had too little to send to fill it (its delivery-rate sample app-limited):
        // then what waits in our socket is a keyframe that the congestion window paces through
        // (16-24 KB unsent, 107-183 ms, every other second through a 1200 kbit/s tbf at 0.75 of
        // it: probes at 847-933 kbps failed for 30 s on them). A probe over the link keeps the
        // path full, so the kernel's sample is not app-limited.
        let burstOnly = bottleneckInPath && reportedKbps == nil
            && path.map { $0.queueMs < noPathQueueMs && $0.deliveryKbps == nil } ?? false
        // (Such a second counts as calm too: a keyframe every 2 s kept a probe from ever holding.)
        if backlog > backlogMs || (probing && backlog >= 100 && backlog > previous && !burstOnly) {
            // The first second of an episode counts alone, and leaves the window at the second:
            // it includes what the path's buffers took in as the queue built.
            episodeSeconds = episodeContinues ? episodeSeconds + 1 : 1
            if !episodeContinues {
                pathAckedSum = 0
                pathAckedSeconds = 0
            }
            // What the receiver says arrived, when it says: a loss fraction counted against this
            // second's bytes describes an earlier, higher rate (WHIP's cuts compounded to the floor).
            var sample = reportedKbps ?? sentKbps
            // A TCP second in which almost nothing got through while the queue was full is the
            // sender waiting out a retransmission timeout after a tail drop, not the link: 45
            // kbit/s in the second second of a 2000 ms tbf's onset put the ceiling, and the
            // target, at the floor for 4 s. It measures nothing: the previous congested second's
            // count stands. (One second: a link that did collapse shows the next second too.)
            let stalled = reportedKbps == nil && path != nil && episodeContinues && !lastSecondStalled
                && sample * 4 < lastCongestedKbps
            lastSecondStalled = stalled
            if stalled { sample = lastCongestedKbps } else { lastCongestedKbps = sample }
            if reportedKbps == nil, let p = path {
                // Once seen, the queue before the reader stays the explanation until a congested
                // second shows none at all (a peer reading slowly that the kernel cannot see).
                if p.queueMs >= pathQueueMs { bottleneckInPath = true }
                // Not on a probe's second: a probe over the link fills our socket's buffer before
                // the path's queue shows in the RTT (1 ms through a 1200 kbit/s tbf while the
                // kernel held 108 ms unsent), and leaving the path's rules then left the recovery
                // to the 12 s probes: never back at 80% within the 16 s after the link returned
                // (tools/bitrate_shaped.py).
                if p.queueMs < noPathQueueMs && !probing { bottleneckInPath = false }
                if bottleneckInPath {
                    if !episodeContinues {
                        // The first second of an episode measures the loss repair that began it
                        // (a 1200 kbit/s link gave 540 and 564): no lower than half of what was
                        // sent (TCP's own cut), nor than the kernel's delivery-rate sample.
                        // (With the queue at the peer that sample is of the path to it, not of
                        // its reader: 26-37 Mbit/s over loopback to a relay reading 1.2.)
                        let pathRate = p.queueAtPeer ? nil : p.deliveryKbps
                        sample = max(pathRate ?? sample, p.ackedKbps, (currentKbps + audioKbps) / 2)
                    } else {
                        // The path's own queue is full, so the bottleneck is busy every moment:
                        // what the peer acknowledged over the episode's next seconds (the first
                        // left out) is what it carries. One second alone is off by what ACKs
                        // carried across the tick (947-1300 through a 1200 kbit/s tbf); the
                        // kernel's delivery-rate sample swings further (685-1762 in the same
                        // seconds), and one high sample put the ceiling, and rest, over the link.
                        if !stalled {
                            if pathAckedSeconds == pathAckedWindow {
                                pathAckedSum -= pathAckedSum / pathAckedWindow
                            } else {
                                pathAckedSeconds += 1
                            }
                            pathAckedSum += p.ackedKbps
                        }
                        if pathAckedSeconds > 0 {
                            sample = pathAckedSum / pathAckedSeconds
                            pathMeasuredKbps = max(floorKbps, sample - audioKbps)
                        }
                    }
                }
            }
            if secondsSinceProbeFailed <= probeRepairSeconds {
                sample = max(sample, ceilingKbps + audioKbps)
            }
            if episodeSeconds <= 2 {
                congestedSent = (sample, sample, sample)
                congestedSeconds = 1
            } else {
                congestedSent = (congestedSent.1, congestedSent.2, sample)
                congestedSeconds += 1
            }
            if !episodeContinues { episodeBaseKbps = ceilingKbps }
            pathHeld = 0
            // The median of the window: one second's count is high or low by what crossed a tick
            // boundary or filled a buffer, not by the link. The running lowest put the 45-minute
            // soak's ceiling at 816 under a link that carried ~1050; the best second put
            // SlowLinkTest's at 1256 through a 1200 kbit/s link.
            let window = min(3, congestedSeconds)
            let (a, b, c) = congestedSent
            let middle = window < 3 ? (window < 2 ? c : (b + c) / 2) : max(min(a, b), min(max(a, b), c))
            let carried = min(targetKbps, max(floorKbps, middle - audioKbps))
            inEpisode = true
            calm = 0
            calmSinceChange = 0
            if probing {
                // The probe failed, not the ceiling under it (held calm): back to rest under it,
                // and probe less often. A link that did slow down keeps the queue up, and the next
                // congested seconds lower the ceiling to what it carries.
                failed(at: currentKbps)
                endProbe(failed: true)
                apply(restLevel)
                return
            }
            // Already at rest or below and the queue shrinks: let it drain. (Through the path the
            // seconds of a draining queue still measure the link: its ceiling follows them, so a
            // low second early in the episode, loss repair, does not stay the ceiling.)
            if backlog < previous && currentKbps <= restLevel {
                if bottleneckInPath && reportedKbps == nil && episodeContinues {
                    ceilingKbps = min(episodeBaseKbps, carried)
                }
                return
            }
            // What got through while the queue was full is what the link carries now, and a
            // congestion never raises the ceiling (only held probes do): a second's count can
            // include a burst into buffers.
            if !episodeContinues { failed(at: max(currentKbps, failedKbps ?? 0)) }
            ceilingKbps = min(episodeBaseKbps, carried)
            probeInterval = probeIntervalSeconds
            probesHeld = 0
            // Under what the link carries by enough to drain the queue within `drainSeconds`, once
            // a second congested second confirms the estimate (one second alone can be far low:
            // WHIP's first congested second put it at 37% of the link).
            // In a failed probe's repair seconds the queue is the probe's own excess, a second or
            // two of it, which `settleFraction` empties in seconds: the deeper drain, sized by a
            // backlog that the path's queue swells, put a 2000 ms tbf's target at 0.65 of the
            // link for 4 s after a 25% probe that stood 2 s (753 after 1277, in CI). A link that
            // did slow down keeps the queue up past these seconds and is drained then.
            let queuedKbit = backlog * (currentKbps + audioKbps) / 1000
            let settle = Int(Double(ceilingKbps) * settleFraction)
            let drain = episodeSeconds < 2 || secondsSinceProbeFailed <= probeRepairSeconds ? settle
                : max(Int(Double(ceilingKbps) * lowestFitFraction), ceilingKbps - queuedKbit / drainSeconds)
            let fit = max(floorKbps, min(settle, drain))
            if fit < currentKbps * 95 / 100 { apply(fit) }
            return
        }
        // A probe above the ceiling whose bytes the link did not carry (the transport's own
        // buffers took the difference) fails before any queue shows; the ceiling stays the level
        // the link last carried (what got through in two seconds includes what path buffers took).
        if probing && currentKbps > ceilingKbps && probeSeconds >= 2 && !burstOnly
            && probeDelivered * 100 < probeHanded * (100 - carriedShortfallPercent) {
            failed(at: currentKbps)
            endProbe(failed: true)
            calm = 0
            apply(restLevel)
            return
        }
        guard backlog < 100 || burstOnly else {
            calm = 0
            return
        }
        calm += 1
        calmSinceChange += 1
        if bottleneckInPath, let p = path {
            probeThroughPath(p)
            return
        }
        guard calm >= calmSeconds else { return }
        if probing {
            guard calmSinceChange >= holdSeconds else { return }
            if currentKbps > ceilingKbps {
                // Held above the ceiling, every byte carried: the link carries this level, and
                // the next step may be larger. While a failure is remembered the link is near,
                // and a probe 1-2% over it holds: the excess hides in buffers under the 2%
                // shortfall and the 100 ms queue for the whole hold (CI: 1214 held through a
                // 1200 kbit/s link of video only, and rest stood at 1141, over 95% of the link).
                // So the ceiling rises only as far as the link delivered over the hold, and a
                // probe it delivered no more of than the ceiling failed: its level is remembered.
                // The step that confirms a recovery is judged so too, and holds only if the link
                // delivered it whole (the 2% shortfall): a 3% step 1-2% over the link hides in
                // the buffers just as a small one does, and read as a recovery it led to a 50%
                // step (the simulated 1195 kbit/s link of aHeldProbeRaisesTheCeiling...).
                let judged = failedKbps != nil || confirming
                let carried = judged ? min(currentKbps, probeCarriedKbps) : currentKbps
                let whole = !confirming || carried * 100 >= currentKbps * (100 - carriedShortfallPercent)
                guard carried > ceilingKbps, whole else {
                    failed(at: currentKbps)
                    endProbe(failed: true)
                    apply(restLevel)
                    return
                }
                ceilingKbps = carried
                probesHeld += 1
            }
            if confirming {
                // Held 5% over small probes that held: the link recovered; 50% steps follow. (A
                // 27% step costs SlowLinkTest's recovery 3-4 s, and under a throttle whose
                // ceiling was measured low it leaves 95% of the link just as a 50% one does.)
                confirming = false
                probesHeld = confirmedProbesHeld
            } else if let failed = failedKbps, currentKbps >= failed {
                // The link now carries a level it did not: it recovered, the large steps follow.
                // (`probesHeld` already counts the small steps: set, not raised, so the next
                // step is 27%, not 50%.)
                failedKbps = nil
                probesHeld = recoveredProbesHeld
            } else if failedKbps != nil && probesHeld >= recoveryStreak {
                // Small steps kept holding: a recovered link, or a ceiling measured low. One
                // step of 5% tells them apart before any large one.
                failedKbps = nil
                confirming = true
                endProbe(failed: false)
                startProbe(min(probeLimit, Int(Double(ceilingKbps) * (1 + confirmStep))))
                return
            }
            // Held at the ceiling (the level the link last carried): step gently above it.
            endProbe(failed: false)
            let next = min(probeLimit, Int(Double(ceilingKbps) * (1 + ceilingStep)))
            if next > currentKbps {
                startProbe(next)
            } else if currentKbps > ceilingKbps {
                // Held, but the link delivered no more than the ceiling: the level is not one it
                // carries, so rest under the ceiling rather than stand over it.
                apply(restLevel)
            }
            return
        }
        guard currentKbps < targetKbps else { return }
        if currentKbps < restLevel {
            apply(min(restLevel, currentKbps * 125 / 100 + 50))
        } else if calmSinceChange >= probeInterval {
            // To the ceiling, the level the link last carried: a ceiling measured in a burst fails
            // this probe and is measured again.
            // While a failure is remembered the ceiling is known to hold (a probe failed above it):
            // straight to one small step above it, or the failed level.
            let above = failedKbps == nil ? ceilingKbps : Int(Double(ceilingKbps) * (1 + ceilingStep))
            let next = min(probeLimit, max(above, currentKbps + 1))
            if next > currentKbps { startProbe(next) }
        }
    }

    /// A calm second when the bottleneck is in the path: the RTT tells within a second whether a
    /// level fits (a queue building in the path shows as RTT growth before any loss), so probes
    /// need no long holds and no memory of failed levels. Every `pathProbeIntervalSeconds` at
    /// rest one probe `pathProbeStep` over the ceiling; it fails when the path's queue adds
    /// `pathProbeFailMs` (back to rest, the ceiling kept), and held `calmSeconds` it becomes the
    /// ceiling and the next steps are `pathClimbSteps`, then `pathClimbStep` (from under
    /// `pathMeasuredKbps`, no further than it). It fails too when the kernel measured the
    /// path full at no more than the probe's rate (a probe just over the link queues too slowly
    /// for the RTT to show it in two seconds; the 50% step after it did not).
    private func probeThroughPath(_ p: PathSample) {
        // The kernel measured the path full (not app-limited) at no more than the probe sends:
        // the probe is at or over the link, before its queue shows in the RTT.
        if probing && (p.queueMs >= pathProbeFailMs || pathFull(p.deliveryKbps)) {
            pathHeld = 0
            endProbe(failed: true)
            calm = 0
            apply(restLevel)
            return
        }
        guard calm >= calmSeconds else { return }
        let limit = min(targetKbps, peerCapKbps ?? targetKbps)
        if probing {
            guard calmSinceChange >= calmSeconds else { return }
            // Held only once the encoder did send at the probe's rate in its last second: a starved
            // encoder (a busy machine) leaves the path idle under any target, which shows nothing
            // of the link. (Not over the whole probe: x264's rate control takes a second to reach
            // a new rate, and averaging that second in held a 25% step a third second, 1 s of the
            // 11 s a CI run took to come back after the link returned.)
            guard probeLastHanded * 100 >= (currentKbps + audioKbps) * probeFilledPercent else { return }
            ceilingKbps = max(ceilingKbps, currentKbps)
            failedKbps = nil
            endProbe(failed: false)
            pathHeld += 1
            if let measured = pathMeasuredKbps, currentKbps * 100 >= measured * (100 - pathFullMarginPercent) {
                // Held at what the path last carried (or above): the steps from here are the
                // climb's, from the first (one small step more first cost a link that returned
                // 2 s, 11 s in all to be back at 80%).
                pathMeasuredKbps = nil
                pathHeld = 1
            }
            let step = pathHeld >= 3 ? pathClimbStep : pathHeld == 2 ? pathClimbSteps.1 : pathClimbSteps.0
            var next = min(limit, Int(Double(currentKbps) * (1 + step)))
            // Climbing back after a drain: up to what the path last carried, no further (a 50%
            // step from a drained level went to 1.3x the link).
            if let measured = pathMeasuredKbps { next = min(next, measured) }
            if next > currentKbps { startProbe(next) }
            return
        }
        guard currentKbps < limit else { return }
        if currentKbps < restLevel {
            let from = currentKbps
            startWatch()
            apply(min(restLevel, currentKbps * 125 / 100 + 50))
            climbFromKbps = from
        } else if calm >= pathProbeIntervalSeconds && calmSinceChange >= 1 {
            // The interval counts calm seconds, not seconds at rest: a climb back to rest after a
            // drain has waited its calm seconds already (waiting 3 s more at rest cost a link that
            // returned then 2 s of the 10 s in which it must be back at 80%).
            let next = min(limit, Int(Double(max(ceilingKbps, currentKbps)) * (1 + pathProbeStep)))
            if next > currentKbps { startProbe(next) }
        }
    }

    /// The peer's unread bytes beyond `peerNoiseBytes`, as ms of media at the current rate.
    private func unreadMs(_ unread: Int) -> Int {
        max(0, unread - peerNoiseBytes) * 8 / max(1, currentKbps + audioKbps)
    }

    /// The kernel measured the path full (its sample not app-limited: nil) at no more than the
    /// current level sends: it is at or over the link, before its queue shows in the RTT.
    private func pathFull(_ deliveryKbps: Int?) -> Bool {
        deliveryKbps.map { $0 * 100 < (currentKbps + audioKbps) * (100 + pathFullMarginPercent) } ?? false
    }

    /// The video rate the link delivered over the current probe, its first second left out (x264
    /// reaching the new rate), less audio; the probe's level until it has stood two seconds.
    private var probeCarriedKbps: Int {
        guard probeSeconds >= 2 else { return currentKbps }
        return max(floorKbps, (probeDelivered - probeFirstDelivered) / (probeSeconds - 1) - audioKbps)
    }

    /// No probe goes past the target, the receiver's estimate, or a level that failed recently.
    private var probeLimit: Int { min(targetKbps, peerCapKbps ?? targetKbps, failedKbps ?? targetKbps) }

    /// A level the link did not carry: probes stay at or under it for `failureMemorySeconds`.
    private func failed(at kbps: Int) {
        confirming = false
        failedKbps = min(kbps, targetKbps)
        secondsSinceFailure = 0
    }

    private func startProbe(_ kbps: Int) {
        probing = true
        startWatch()
        probeHanded = 0
        probeLastHanded = 0
        probeDelivered = 0
        probeFirstDelivered = 0
        probeSeconds = 0
        apply(kbps)
    }

    /// The watch's readings start over with a new level (`watch(nowNs:)`).
    private func startWatch() {
        probeStartNs = clockNs
        watchNs = clockNs
        watchQueueMs = nil
        watchQueueBeforeMs = nil
        watchOver = 0
    }

    /// A failed probe doubles the wait before the next one and restarts the steps at 3%. (A climb
    /// step the watch failed counts as a failed probe.)
    private func endProbe(failed: Bool) {
        probing = false
        guard failed else { return }
        // In the stats: how long the failed probe's target stood (from the tick or reading that
        // set it to the one that ended it) and at what level.
        let level = currentKbps, ms = Int(max(0, clockNs - probeStartNs) / 1_000_000)
        stats.update {
            $0.probesFailed += 1
            $0.lastFailedProbeKbps = level
            $0.lastFailedProbeMs = ms
        }
        secondsSinceProbeFailed = 0
        probesHeld = 0
        probeInterval = min(maxProbeIntervalSeconds, probeInterval * 2)
    }

    /// Where the target rests below the ceiling between probes.
    private var restLevel: Int { max(floorKbps, Int(Double(ceilingKbps) * restFraction)) }

    /// The share of the ceiling the target rests at: `returnFraction` when the path's queue
    /// measured the ceiling, `byteCountReturnFraction` when the byte counts did.
    var restFraction: Double { bottleneckInPath ? returnFraction : byteCountReturnFraction }

    private func apply(_ kbps: Int) {
        currentKbps = kbps
        calmSinceChange = 0
        encoder.requestBitrate(kbps: kbps)
        stats.update { $0.targetVideoKbps = kbps }
    }
}
