import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// One stats report as JSON: the object of each `--stats-json` line, of the C ABI's
/// `bk_session_stats_json` and of the control socket's `stats`. One writer, so every consumer
/// sees the same keys; rates (fps, kbps) are over the interval since the previous report.
package struct StatsReport {
    var snapshot: StatsSnapshot
    /// Seconds since the run started.
    package var timeSeconds: Double
    var state: String
    package var fps: Double
    package var kbps: Double
    var videoKbps: Double
    var audioKbps: Double
    package var rssBytes: Int
    var peakRssBytes: Int
    /// The RSS split: anonymous, file-backed and shared pages (RssAnon, RssFile, RssShmem).
    var rssAnonBytes: Int
    var rssFileBytes: Int
    var rssShmemBytes: Int
    var latencyMs: (p50: Double, p99: Double)?
    /// Each destination's line, primary first (names are redacted: no key).
    var destinations: [DestinationStats]
    /// Seconds the primary was not delivering since it first went live.
    var downtimeSeconds: Double

    /// A report of `snapshot`, with rates against `previous` (or since `startNs` for the first).
    /// `memory`: one read of /proc/self/status (the default reads it now).
    package init(_ snapshot: StatsSnapshot, previous: StatsSnapshot?, startNs: Int64, state: String,
                 latencyMs: (p50: Double, p99: Double)?,
                 destinations: [DestinationStats] = [], downtimeSeconds: Double = 0,
                 memory: ProcessMemory.Sample = ProcessMemory.sample()) {
        self.snapshot = snapshot
        self.state = state
        self.latencyMs = latencyMs
        self.destinations = destinations
        self.downtimeSeconds = downtimeSeconds
        rssBytes = memory.residentBytes
        peakRssBytes = memory.peakResidentBytes
        rssAnonBytes = memory.anonymousBytes
        rssFileBytes = memory.fileBytes
        rssShmemBytes = memory.sharedBytes
        timeSeconds = Double(snapshot.monotonicNs - startNs) / 1e9
        let dt = previous.map { Double(snapshot.monotonicNs - $0.monotonicNs) / 1e9 } ?? timeSeconds
        func rate(_ now: Int, _ before: Int?) -> Double { dt > 0 ? Double(now - (before ?? 0)) / dt : 0 }
        fps = rate(snapshot.videoFramesSent, previous?.videoFramesSent)
        kbps = rate(snapshot.bytesSent, previous?.bytesSent) * 8 / 1000
        videoKbps = rate(snapshot.videoBytesSent, previous?.videoBytesSent) * 8 / 1000
        audioKbps = rate(snapshot.audioBytesSent, previous?.audioBytesSent) * 8 / 1000
    }

    /// A transport's own link statistics (SRT) as `,"link":{…}`.
    private static func writeLink(_ l: TransportLinkStats, into b: ReportBuffer) {
        b.append(",\"link\":{\"rtt_ms\":"); b.append(l.rttMs, decimals: 1)
        b.append(",\"bandwidth_mbps\":"); b.append(l.bandwidthMbps, decimals: 1)
        b.append(",\"send_rate_mbps\":"); b.append(l.sendRateMbps, decimals: 2)
        b.append(",\"packets_sent\":"); b.append(l.packetsSent)
        b.append(",\"packets_lost\":"); b.append(l.packetsLost)
        b.append(",\"packets_retransmitted\":"); b.append(l.packetsRetransmitted)
        b.append(",\"packets_dropped\":"); b.append(l.packetsDropped)
        b.append(",\"send_buffer_ms\":"); b.append(l.sendBufferMs)
        b.append("}")
    }

    /// Made once: a synthesized `allCases` may build its array on each use.
    private static let dropReasons = DropReason.allCases

    /// The report as one JSON object, no trailing newline (allocates: for the on-demand paths;
    /// the once-a-second writer uses `write(into:)`).
    package var json: String {
        let b = ReportBuffer(capacity: 4096 + destinations.reduce(0) { $0 + 512 + 6 * $1.name.utf8.count })
        write(into: b)
        return b.string
    }

    /// Appends the JSON object to `b` without allocating. `state` and each destination's kind and
    /// state are fixed words that need no escaping; names are escaped.
    package func write(into b: ReportBuffer) {
        let s = snapshot
        b.append("{\"time_s\":"); b.append(timeSeconds, decimals: 3)
        b.append(",\"state\":\""); b.append(state)
        b.append("\",\"monotonic_ns\":"); b.append(Int(s.monotonicNs))
        b.append(",\"fps\":"); b.append(fps, decimals: 2)
        b.append(",\"kbps\":"); b.append(kbps, decimals: 1)
        b.append(",\"video_kbps\":"); b.append(videoKbps, decimals: 1)
        b.append(",\"audio_kbps\":"); b.append(audioKbps, decimals: 1)
        b.append(",\"video_frames_in\":"); b.append(s.videoFramesIn)
        b.append(",\"video_frames_repeated\":"); b.append(s.videoFramesRepeated)
        b.append(",\"video_frames_skipped\":"); b.append(s.videoFramesSkipped)
        b.append(",\"video_frames_encoded\":"); b.append(s.videoFramesEncoded)
        b.append(",\"video_frames_sent\":"); b.append(s.videoFramesSent)
        b.append(",\"audio_frames_sent\":"); b.append(s.audioFramesSent)
        b.append(",\"video_bytes_sent\":"); b.append(s.videoBytesSent)
        b.append(",\"audio_bytes_sent\":"); b.append(s.audioBytesSent)
        b.append(",\"bytes_sent\":"); b.append(s.bytesSent)
        b.append(",\"drops\":{")
        // Index loops, not `for in`: an unspecialized iterator (debug builds) allocates per step.
        let reasons = Self.dropReasons
        var k = 0
        while k < reasons.count {
            let r = reasons[k]
            b.append(k == 0 ? "\"" : ",\"")
            b.append(r.rawValue); b.append("\":"); b.append(s.drops(r))
            k += 1
        }
        b.append("},\"total_drops\":"); b.append(s.totalDrops)
        b.append(",\"queue_bytes\":"); b.append(s.queueBytes)
        b.append(",\"queue_ms\":"); b.append(s.queueMs)
        b.append(",\"rss_bytes\":"); b.append(rssBytes)
        b.append(",\"peak_rss_bytes\":"); b.append(peakRssBytes)
        b.append(",\"rss_anon_bytes\":"); b.append(rssAnonBytes)
        b.append(",\"rss_file_bytes\":"); b.append(rssFileBytes)
        b.append(",\"rss_shmem_bytes\":"); b.append(rssShmemBytes)
        b.append(",\"target_video_kbps\":"); b.append(s.targetVideoKbps)
        b.append(",\"probes_failed\":"); b.append(s.probesFailed)
        b.append(",\"last_failed_probe_kbps\":"); b.append(s.lastFailedProbeKbps)
        b.append(",\"last_failed_probe_ms\":"); b.append(s.lastFailedProbeMs)
        b.append(",\"reconnects\":"); b.append(s.reconnects)
        b.append(",\"late_tags_clamped\":"); b.append(s.lateTagsClamped)
        b.append(",\"video_pts_corrections\":"); b.append(s.videoPtsCorrections)
        b.append(",\"audio_non_finite_samples\":"); b.append(s.audioNonFiniteSamples)
        b.append(",\"latency_p50_ms\":")
        if let l = latencyMs { b.append(l.p50, decimals: 1) } else { b.append("null") }
        b.append(",\"latency_p99_ms\":")
        if let l = latencyMs { b.append(l.p99, decimals: 1) } else { b.append("null") }
        b.append(",\"downtime_s\":"); b.append(downtimeSeconds, decimals: 1)
        b.append(",\"destinations\":[")
        var i = 0
        while i < destinations.count {
            let d = destinations[i]
            b.append(i == 0 ? "{\"name\":" : ",{\"name\":"); b.appendJSONString(d.name)
            b.append(",\"kind\":\""); b.append(d.kind)
            b.append("\",\"state\":\""); b.append(d.state)
            b.append("\",\"kbps\":"); b.append(d.kbps, decimals: 1)
            b.append(",\"bytes_sent\":"); b.append(d.bytesSent)
            b.append(",\"queue_bytes\":"); b.append(d.queueBytes)
            b.append(",\"queue_ms\":"); b.append(d.queueMs)
            b.append(",\"drops\":"); b.append(d.drops)
            b.append(",\"reconnects\":"); b.append(d.reconnects)
            b.append(",\"downtime_s\":"); b.append(d.downtimeSeconds, decimals: 1)
            if let l = d.link { Self.writeLink(l, into: b) }
            if let k = d.peerEstimateKbps { b.append(",\"peer_estimate_kbps\":"); b.append(k) }
            b.append("}")
            i += 1
        }
        b.append("]}")
    }
}
