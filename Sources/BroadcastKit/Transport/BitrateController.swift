/// Adapts the x264 bitrate to what the network actually carries, then climbs back.
///
/// Once a second: if the primary send queue holds more than `backlogMs`, the video target drops
/// to 85% of the measured send rate (minus audio), never below `floorKbps`; after the queue has
/// stayed near empty for `calmSeconds`, it rises by 15% every other second up to the target.
final class BitrateController: @unchecked Sendable {
    private let encoder: VideoEncoder
    private let queue: SendQueue
    private let stats: BroadcastStats
    let targetKbps: Int
    let audioKbps: Int
    let floorKbps: Int
    let backlogMs = 300
    let calmSeconds = 3
    private(set) var currentKbps: Int
    private var lastBytes = 0
    private var lastNs: Int64 = 0
    private var calm = 0

    init(encoder: VideoEncoder, queue: SendQueue, targetKbps: Int, audioKbps: Int, stats: BroadcastStats) {
        self.encoder = encoder
        self.queue = queue
        self.targetKbps = targetKbps
        self.audioKbps = audioKbps
        self.stats = stats
        floorKbps = max(150, targetKbps / 8)
        currentKbps = targetKbps
    }

    func tick(nowNs: Int64) {
        let sent = stats.snapshot().bytesSent
        defer { lastBytes = sent; lastNs = nowNs }
        guard lastNs > 0 else { return }
        let seconds = Double(nowNs - lastNs) / 1e9
        let sentKbps = Int(Double(sent - lastBytes) * 8 / 1000 / seconds)
        let backlog = queue.queuedDurationMs
        if backlog > backlogMs {
            calm = 0
            let fit = max(floorKbps, Int(Double(sentKbps) * 0.85) - audioKbps)
            if fit < currentKbps * 95 / 100 { apply(fit) }
        } else if backlog < 100 {
            calm += 1
            if calm >= calmSeconds && currentKbps < targetKbps {
                apply(min(targetKbps, currentKbps * 115 / 100 + 50))
                calm = calmSeconds - 2
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
