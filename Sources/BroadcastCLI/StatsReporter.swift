#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// Once a second: one JSON object per line into `--stats-json`, and the live status line on a terminal.
final class StatsReporter {
    private var fd: Int32 = -1
    private let statusLine: Bool
    private var previous: StatsSnapshot?
    private let startNs: Int64
    private var lastLineLength = 0

    init(jsonPath: String?, statusLine: Bool) throws {
        self.statusLine = statusLine
        startNs = MediaTime.now()
        if let path = jsonPath {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                throw UsageError("--stats-json \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    func report(_ s: StatsSnapshot, state: String, reconnects: Int, latency: (p50: Double, p99: Double)? = nil) {
        let t = Double(s.monotonicNs - startNs) / 1e9
        let p = previous
        let dt = p.map { Double(s.monotonicNs - $0.monotonicNs) / 1e9 } ?? t
        func rate(_ now: Int, _ before: Int?) -> Double { dt > 0 ? Double(now - (before ?? 0)) / dt : 0 }
        let fps = rate(s.videoFramesSent, p?.videoFramesSent)
        let vk = rate(s.videoBytesSent, p?.videoBytesSent) * 8 / 1000
        let ak = rate(s.audioBytesSent, p?.audioBytesSent) * 8 / 1000
        let kbps = rate(s.bytesSent, p?.bytesSent) * 8 / 1000
        previous = s
        let rss = ProcessMemory.residentBytes(), peak = ProcessMemory.peakResidentBytes()
        if fd >= 0 {
            var drops = ""
            for (i, r) in DropReason.allCases.enumerated() {
                drops += (i == 0 ? "" : ",") + "\"\(r.rawValue)\":\(s.drops(r))"
            }
            let line = "{\"time_s\":\(fixed(t, 3)),\"state\":\"\(state)\",\"fps\":\(fixed(fps, 2)),\"kbps\":\(fixed(kbps, 1)),"
                + "\"video_kbps\":\(fixed(vk, 1)),\"audio_kbps\":\(fixed(ak, 1)),\"video_frames_sent\":\(s.videoFramesSent),"
                + "\"audio_frames_sent\":\(s.audioFramesSent),\"bytes_sent\":\(s.bytesSent),\"drops\":{\(drops)},"
                + "\"queue_bytes\":\(s.queueBytes),\"queue_ms\":\(s.queueMs),\"rss_bytes\":\(rss),\"peak_rss_bytes\":\(peak),"
                + "\"target_video_kbps\":\(s.targetVideoKbps),\"reconnects\":\(reconnects),"
                + "\"video_frames_in\":\(s.videoFramesIn),\"video_frames_encoded\":\(s.videoFramesEncoded),"
                + "\"late_tags_clamped\":\(s.lateTagsClamped),\"video_pts_corrections\":\(s.videoPtsCorrections),"
                + "\"latency_p50_ms\":\(latency.map { fixed($0.p50, 1) } ?? "null"),"
                + "\"latency_p99_ms\":\(latency.map { fixed($0.p99, 1) } ?? "null")}\n"
            var l = line
            l.withUTF8 { b in _ = write(fd, b.baseAddress, b.count) }
        }
        if statusLine {
            let mm = Int(t) / 60, ss = Int(t) % 60
            var line = "\r[\(mm < 10 ? "0" : "")\(mm):\(ss < 10 ? "0" : "")\(ss)] \(state) \(fixed(fps, 1)) fps "
                + "\(Int(kbps)) kbps  drops \(s.totalDrops)  queue \(s.queueMs) ms  rss \(fixed(Double(rss) / 1048576, 1)) MB"
            let pad = max(0, lastLineLength - line.count)
            lastLineLength = line.count
            line += String(repeating: " ", count: pad)
            line.withUTF8 { b in _ = write(2, b.baseAddress, b.count) }
        }
    }

    /// Ends the status line so later messages start on a fresh line.
    func endStatusLine() {
        if statusLine && lastLineLength > 0 { _ = write(2, "\n", 1) }
    }
}

/// Formats with a fixed number of decimals without Foundation.
func fixed(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let n = Int((abs(v) * scale).rounded())
    let whole = n / Int(scale), frac = n % Int(scale)
    var f = String(frac)
    while f.count < decimals { f = "0" + f }
    return (v < 0 && n != 0 ? "-" : "") + String(whole) + (decimals > 0 ? "." + f : "")
}
