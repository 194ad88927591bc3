#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import CBroadcastKitABI

/// `bk_limits()`: `BroadcastLimits` and the library's defaults as one static C table, built on first
/// use and never freed, so the Python binding and the GStreamer element map values instead of
/// restating them.
nonisolated(unsafe) private let limitTable: UnsafeMutablePointer<bk_limit_table> = {
    typealias L = BroadcastLimits
    let d = BroadcastConfiguration.default
    func range(_ r: ClosedRange<Int>, _ value: Int) -> bk_range {
        bk_range(min: Int32(r.lowerBound), max: Int32(r.upperBound), default_value: Int32(value))
    }
    let t = UnsafeMutablePointer<bk_limit_table>.allocate(capacity: 1)
    t.initialize(to: bk_limit_table(
        width: range(L.width, d.video.width), height: range(L.height, d.video.height), fps: range(L.fps, d.video.fps),
        video_bitrate_kbps: range(L.videoBitrateKbps, d.video.bitrateKbps),
        keyframe_interval_seconds: range(L.keyframeIntervalSeconds, d.video.keyframeIntervalSeconds),
        aac_bitrate_kbps: range(L.aacBitrateKbps, L.defaultAudioBitrateKbps(.aac)),
        opus_bitrate_kbps: range(L.opusBitrateKbps, L.defaultAudioBitrateKbps(.opus)),
        replay_seconds: range(L.replaySeconds, d.replay.seconds),
        presets: UnsafePointer(strdup(X264Preset.allCases.map(\.rawValue).joined(separator: ","))),
        default_preset: UnsafePointer(strdup(d.video.preset)),
        default_memory_budget_bytes: Int64(d.memoryBudgetBytes),
        reconnect_attempts: range(L.reconnectAttempts, d.reconnect.maxAttempts),
        reconnect_delay_min_seconds: L.reconnectDelaySeconds.lowerBound,
        reconnect_delay_max_seconds: L.reconnectDelaySeconds.upperBound,
        reconnect_delay_default_seconds: d.reconnect.initialDelaySeconds))
    return t
}()

@_cdecl("bk_limits")
public func _bkLimits() -> UnsafePointer<bk_limit_table> {
    UnsafePointer(limitTable)
}
