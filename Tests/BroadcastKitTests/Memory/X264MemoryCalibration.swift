#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastKit

/// Measures x264's memory in this process for one configuration, for `MemoryPlan.x264WorkingBytes`.
/// Off unless `BK_X264_CALIBRATE=RES:PRESET[:lean[:wpN]]` is set (e.g. `1080p:veryfast:lean`; `wp1`
/// turns weighted prediction back on in the lean tuning); run one
/// configuration per process so freed encoder memory does not hide the next one's growth:
///
///     BK_X264_CALIBRATE=1080p:veryfast:lean swift test --filter X264MemoryCalibration
@Suite(.timeLimit(.minutes(5)), .serialized) struct X264MemoryCalibration {
    static let spec: String? = getenv("BK_X264_CALIBRATE").map { String(cString: $0) }

    @Test(.enabled(if: spec != nil)) func measure() throws {
        let parts = (Self.spec ?? "").split(separator: ":").map(String.init)
        let (w, h, kbps) = parts[0] == "1080p" ? (1920, 1080, 4500) : parts[0] == "720p" ? (1280, 720, 2500) : (854, 480, 1200)
        var s = VideoEncoderSettings(width: w, height: h, fps: 30, bitrateKbps: kbps, preset: parts[1])
        if parts.count > 2 && parts[2] == "lean" { s.tuning = .lean }
        if parts.count > 3, parts[3].hasPrefix("wp") { s.tuning.weightedPrediction = Int(parts[3].dropFirst(2)) }

        // Moving textured content: a noise image scrolled 3 px right and 2 px down per frame.
        let base = CodecTestPicture(width: w + 256, height: h + 256)
        base.fillNoise()
        let pic = CodecTestPicture(width: w, height: h)
        func render(_ t: Int) {
            let src = base.bytes.baseAddress!, dst = pic.bytes.baseAddress!
            let dx = (t * 3) % 256, dy = (t * 2) % 256
            for y in 0..<h { memcpy(dst + y * w, src + (y + dy) * (w + 256) + dx, w) }
            let cw = w / 2, bw = (w + 256) / 2
            for plane in 0..<2 {
                let d = dst + w * h + plane * cw * (h / 2), sp = src + (w + 256) * (h + 256) + plane * bw * ((h + 256) / 2)
                for y in 0..<(h / 2) { memcpy(d + y * cw, sp + (y + dy / 2) * bw + dx / 2, cw) }
            }
        }
        render(0)

        let before = ProcessMemory.residentBytes()
        let enc = try X264Encoder(settings: s)
        let atOpen = ProcessMemory.residentBytes() - before
        var bytes = 0
        for t in 0..<90 {
            render(t)
            _ = enc.encode(pic.frame, timestampMs: Int64(t * 33), forceKeyframe: false) { bytes += $0.data.count }
        }
        let peak = ProcessMemory.peakResidentBytes() - before - atOpen
        let after = ProcessMemory.residentBytes() - before - atOpen
        let px = Double(w * h)
        print("calibrate \(Self.spec!): at open \(atOpen >> 10) KiB, working peak \(peak >> 10) KiB "
              + "(\(Double(Int(Double(peak) / px * 100)) / 100) B/px), resident after \(after >> 10) KiB, "
              + "planned \(MemoryPlan.x264WorkingBytes(s) >> 10) KiB, \(bytes * 8 / 3 / 1000) kbps")
    }
}
