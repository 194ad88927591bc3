/// One stats report as JSON: the object of each `--stats-json` line, of the C ABI's
/// `bk_session_stats_json` and of the control socket's `stats`. One writer, so every consumer
/// sees the same keys; rates (fps, kbps) are over the interval since the previous report.
package struct StatsReport {
    package var snapshot: StatsSnapshot
    /// Seconds since the run started.
    package var timeSeconds: Double
    package var state: String
    package var fps: Double
    package var kbps: Double
    package var videoKbps: Double
    package var audioKbps: Double
    package var rssBytes: Int
    package var peakRssBytes: Int
    /// The RSS split: anonymous, file-backed and shared pages (RssAnon, RssFile, RssShmem).
    package var rssAnonBytes = ProcessMemory.anonymousBytes()
    package var rssFileBytes = ProcessMemory.fileBytes()
    package var rssShmemBytes = ProcessMemory.sharedBytes()
    package var latencyMs: (p50: Double, p99: Double)?
    /// Each destination's line, primary first (names are redacted: no key).
    package var destinations: [DestinationStats]
    /// Seconds the primary was not delivering since it first went live.
    package var downtimeSeconds: Double

    /// A report of `snapshot`, with rates against `previous` (or since `startNs` for the first).
    package init(_ snapshot: StatsSnapshot, previous: StatsSnapshot?, startNs: Int64, state: String,
                 latencyMs: (p50: Double, p99: Double)?,
                 destinations: [DestinationStats] = [], downtimeSeconds: Double = 0,
                 rssBytes: Int = ProcessMemory.residentBytes(), peakRssBytes: Int = ProcessMemory.peakResidentBytes()) {
        self.snapshot = snapshot
        self.state = state
        self.latencyMs = latencyMs
        self.destinations = destinations
        self.downtimeSeconds = downtimeSeconds
        self.rssBytes = rssBytes
        self.peakRssBytes = peakRssBytes
        timeSeconds = Double(snapshot.monotonicNs - startNs) / 1e9
        let dt = previous.map { Double(snapshot.monotonicNs - $0.monotonicNs) / 1e9 } ?? timeSeconds
        func rate(_ now: Int, _ before: Int?) -> Double { dt > 0 ? Double(now - (before ?? 0)) / dt : 0 }
        fps = rate(snapshot.videoFramesSent, previous?.videoFramesSent)
        kbps = rate(snapshot.bytesSent, previous?.bytesSent) * 8 / 1000
        videoKbps = rate(snapshot.videoBytesSent, previous?.videoBytesSent) * 8 / 1000
        audioKbps = rate(snapshot.audioBytesSent, previous?.audioBytesSent) * 8 / 1000
    }

    /// The report as one JSON object, no trailing newline. `state` is one of the session's fixed
    /// status words, so it needs no escaping.
    package var json: String {
        let s = snapshot
        var drops = ""
        for (i, r) in DropReason.allCases.enumerated() {
            drops += (i == 0 ? "" : ",") + "\"\(r.rawValue)\":\(s.drops(r))"
        }
        return "{\"time_s\":\(fixed(timeSeconds, 3)),\"state\":\"\(state)\",\"monotonic_ns\":\(s.monotonicNs),"
            + "\"fps\":\(fixed(fps, 2)),\"kbps\":\(fixed(kbps, 1)),"
            + "\"video_kbps\":\(fixed(videoKbps, 1)),\"audio_kbps\":\(fixed(audioKbps, 1)),"
            + "\"video_frames_in\":\(s.videoFramesIn),\"video_frames_repeated\":\(s.videoFramesRepeated),"
            + "\"video_frames_encoded\":\(s.videoFramesEncoded),"
            + "\"video_frames_sent\":\(s.videoFramesSent),\"audio_frames_sent\":\(s.audioFramesSent),"
            + "\"video_bytes_sent\":\(s.videoBytesSent),\"audio_bytes_sent\":\(s.audioBytesSent),"
            + "\"bytes_sent\":\(s.bytesSent),\"drops\":{\(drops)},\"total_drops\":\(s.totalDrops),"
            + "\"queue_bytes\":\(s.queueBytes),\"queue_ms\":\(s.queueMs),"
            + "\"rss_bytes\":\(rssBytes),\"peak_rss_bytes\":\(peakRssBytes),"
            + "\"rss_anon_bytes\":\(rssAnonBytes),\"rss_file_bytes\":\(rssFileBytes),\"rss_shmem_bytes\":\(rssShmemBytes),"
            + "\"target_video_kbps\":\(s.targetVideoKbps),\"reconnects\":\(s.reconnects),"
            + "\"late_tags_clamped\":\(s.lateTagsClamped),\"video_pts_corrections\":\(s.videoPtsCorrections),"
            + "\"audio_non_finite_samples\":\(s.audioNonFiniteSamples),"
            + "\"latency_p50_ms\":\(latencyMs.map { fixed($0.p50, 1) } ?? "null"),"
            + "\"latency_p99_ms\":\(latencyMs.map { fixed($0.p99, 1) } ?? "null"),"
            + "\"downtime_s\":\(fixed(downtimeSeconds, 1)),\"destinations\":[\(destinationsJSON)]}"
    }

    private var destinationsJSON: String {
        var out = ""
        for (i, d) in destinations.enumerated() {
            out += (i == 0 ? "" : ",") + "{\"name\":\(jsonString(d.name)),\"kind\":\"\(d.kind)\",\"state\":\"\(d.state)\","
                + "\"kbps\":\(fixed(d.kbps, 1)),\"bytes_sent\":\(d.bytesSent),\"queue_bytes\":\(d.queueBytes),"
                + "\"queue_ms\":\(d.queueMs),\"drops\":\(d.drops),\"reconnects\":\(d.reconnects),"
                + "\"downtime_s\":\(fixed(d.downtimeSeconds, 1))}"
        }
        return out
    }
}

/// `v` with a fixed number of decimals, without Foundation ("0" for NaN and infinities).
package func fixed(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "0" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let n = Int((abs(v) * scale).rounded())
    let whole = n / Int(scale), frac = n % Int(scale)
    var f = String(frac)
    while f.count < decimals { f = "0" + f }
    return (v < 0 && n != 0 ? "-" : "") + String(whole) + (decimals > 0 ? "." + f : "")
}

/// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
package func jsonString(_ s: String) -> String {
    var out = "\""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 {
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(u)
            }
        }
    }
    return out + "\""
}
