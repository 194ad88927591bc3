/// Adapts the x264 bitrate to what the network actually carries, then climbs back.
///
/// It follows one destination (`BitrateFollows`): the primary, or the slowest network
/// publisher that is live (the one with the longest queue this second). Once a second: if that
/// destination's send queue holds more than `backlogMs`, the video target drops
/// to 85% of the measured send rate (minus audio), never below `floorKbps`, and that rate is
/// remembered as the link's ceiling. After `calmSeconds` of a near-empty queue it climbs: +25%
/// a second while well below the remembered ceiling, only +10% every other second near it
/// (probing instead of re-flooding a link that is still slow). The ceiling is forgotten once
/// the rate has held 25% above it for 4 calm seconds, or 20 s after the last congestion, so a link
/// that recovers is used fully again.
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
    private(set) var currentKbps: Int
    /// Bytes sent per destination at the previous tick, so the followed one may change between ticks.
    private var lastBytes: [Int]
    private var lastNs: Int64 = 0
    private var calm = 0
    private var ceilingKbps: Int?
    private var secondsSinceCongestion = 0

    init(encoder: VideoEncoder, destinations: [Destination], follows: BitrateFollows, targetKbps: Int, audioKbps: Int,
         stats: BroadcastStats) {
        self.encoder = encoder
        self.destinations = destinations
        self.follows = follows
        lastBytes = Array(repeating: 0, count: destinations.count)
        self.targetKbps = targetKbps
        self.audioKbps = audioKbps
        self.stats = stats
        floorKbps = max(150, targetKbps / 8)
        currentKbps = targetKbps
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
        defer {
            for (j, d) in destinations.enumerated() { lastBytes[j] = d.bytesSent }
            lastNs = nowNs
        }
        guard lastNs > 0 else { return }
        let seconds = Double(nowNs - lastNs) / 1e9
        let sentKbps = Int(Double(sent - before) * 8 / 1000 / seconds)
        adapt(sentKbps: sentKbps, backlogMs: destinations[i].backlogMs)
    }

    /// One second's decision from what the followed destination sent (`sentKbps`, audio
    /// included) and how much it holds queued (`backlogMs`).
    func adapt(sentKbps: Int, backlogMs backlog: Int) {
        secondsSinceCongestion += 1
        if secondsSinceCongestion > 20 { ceilingKbps = nil }
        if backlog > backlogMs {
            calm = 0
            secondsSinceCongestion = 0
            ceilingKbps = min(ceilingKbps ?? Int.max, max(floorKbps, sentKbps - audioKbps))
            let fit = max(floorKbps, Int(Double(sentKbps) * 0.85) - audioKbps)
            if fit < currentKbps * 95 / 100 { apply(fit) }
        } else if backlog < 100 {
            calm += 1
            guard calm >= calmSeconds, currentKbps < targetKbps else { return }
            // Holding above the congested rate for a few calm seconds means the link recovered.
            if let ceiling = ceilingKbps, currentKbps * 4 > ceiling * 5, calm >= 4 { ceilingKbps = nil }
            if let ceiling = ceilingKbps, currentKbps * 10 >= ceiling * 9 {
                if calm % 2 == 0 { apply(min(targetKbps, currentKbps * 110 / 100 + 10)) }
            } else {
                var next = currentKbps * 125 / 100 + 50
                if let ceiling = ceilingKbps { next = min(next, max(currentKbps + 10, ceiling * 9 / 10)) }
                apply(min(targetKbps, next))
            }
        } else {
            calm = 0
        }
    }

    private func apply(_ kbps: Int) {
        currentKbps = kbps
        encoder.requestBitrate(kbps: kbps)
        stats.update { $0.targetVideoKbps = kbps }
    }
}
