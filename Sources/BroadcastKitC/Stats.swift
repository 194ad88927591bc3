#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import CBroadcastKitABI

enum ABIInfo {
    /// `BuildVersion.description` as a C string that lives as long as the process (made once,
    /// on the first call; a Swift global's initialiser runs exactly once, thread-safely).
    nonisolated(unsafe) static let version: UnsafePointer<CChar> = UnsafePointer(strdup(BuildVersion.description)!)
}

@_cdecl("bk_version")
public func _bkVersion() -> UnsafePointer<CChar> { ABIInfo.version }

@_cdecl("bk_abi_version")
public func _bkABIVersion() -> Int32 { Int32(BK_ABI_VERSION) }

@_cdecl("bk_string_free")
public func _bkStringFree(_ s: UnsafeMutablePointer<CChar>?) { free(s) }

@_cdecl("bk_process_tuning_apply")
public func _bkProcessTuningApply() { ProcessTuning.apply() }

@_cdecl("bk_now_ns")
public func _bkNowNs() -> Int64 { MediaTime.now() }

@_cdecl("bk_drop_reason_name")
public func _bkDropReasonName(_ reason: Int32) -> UnsafePointer<CChar> {
    switch reason {
    case 1: return staticCString("encoder_busy")
    case 2: return staticCString("audio_lane_full")
    case 3: return staticCString("malformed")
    case 4: return staticCString("backwards_timestamp")
    case 5: return staticCString("wrong_lane")
    case 6: return staticCString("congestion_p_frame")
    case 7: return staticCString("congestion_until_idr")
    case 8: return staticCString("queue_full")
    case 9: return staticCString("encoder_error")
    default: return staticCString("")
    }
}

/// `DropReason.allCases` is declared in the order of `bk_process_result`'s drop values.
func fillStats(_ box: SessionBox) -> bk_stats {
    let s = box.session.stats.snapshot()
    var out = bk_stats()
    out.struct_size = UInt32(MemoryLayout<bk_stats>.size)
    out.monotonic_ns = s.monotonicNs
    out.video_frames_in = Int64(s.videoFramesIn)
    out.video_frames_encoded = Int64(s.videoFramesEncoded)
    out.video_frames_sent = Int64(s.videoFramesSent)
    out.audio_frames_sent = Int64(s.audioFramesSent)
    out.video_bytes_sent = Int64(s.videoBytesSent)
    out.audio_bytes_sent = Int64(s.audioBytesSent)
    out.bytes_sent = Int64(s.bytesSent)
    withUnsafeMutableBytes(of: &out.drops) { raw in
        let d = raw.bindMemory(to: Int64.self)
        for (i, r) in DropReason.allCases.enumerated() where i < Int(BK_DROP_REASON_COUNT) { d[i] = Int64(s.drops(r)) }
    }
    out.total_drops = Int64(s.totalDrops)
    out.queue_bytes = Int64(s.queueBytes)
    out.queue_ms = Int64(s.queueMs)
    out.target_video_kbps = Int64(s.targetVideoKbps)
    out.reconnects = Int64(s.reconnects)
    out.late_tags_clamped = Int64(s.lateTagsClamped)
    out.rss_bytes = Int64(ProcessMemory.residentBytes())
    out.peak_rss_bytes = Int64(ProcessMemory.peakResidentBytes())
    let latency = box.session.videoLatencyMs
    out.latency_p50_ms = latency?.p50 ?? -1
    out.latency_p99_ms = latency?.p99 ?? -1
    return out
}

@_cdecl("bk_session_get_stats")
public func _bkSessionGetStats(_ p: OpaquePointer?, _ out: UnsafeMutablePointer<bk_stats>?) -> bk_status {
    guard let box = sessionBox(p), let out else { return BK_ERR_INVALID_ARGUMENT }
    let size = Int(out.pointee.struct_size)
    guard size >= 8 else { return box.fail(BK_ERR_INVALID_ARGUMENT, "bk_stats.struct_size not set (use sizeof(bk_stats))") }
    var s = fillStats(box)
    let n = min(size, MemoryLayout<bk_stats>.size)
    withUnsafeBytes(of: &s) { src in
        UnsafeMutableRawPointer(out).advanced(by: 8).copyMemory(from: src.baseAddress! + 8, byteCount: n - 8)
    }
    return BK_OK
}

@_cdecl("bk_session_stats_json")
public func _bkSessionStatsJSON(_ p: OpaquePointer?) -> UnsafeMutablePointer<CChar>? {
    guard let box = sessionBox(p) else { return nil }
    let snapshot = box.session.stats.snapshot()
    // Rates are over the interval since the previous call (or since the box was made).
    let previous = box.previousStats.withLock { prev in
        defer { prev = snapshot }
        return prev
    }
    let report = StatsReport(snapshot, previous: previous, startNs: box.createdNs, state: box.session.statusText,
                             latencyMs: box.session.videoLatencyMs, destinations: box.session.destinationStats,
                             downtimeSeconds: box.session.downtimeSeconds)
    return strdup(report.json)
}
