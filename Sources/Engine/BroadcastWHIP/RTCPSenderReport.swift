import Glibc
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// An RTCP sender report (RFC 3550 §6.4.1) with no report blocks: it maps the stream's RTP time to
/// the wall clock at which that media was captured (NTP format), so a receiver can line the tracks
/// up and measure capture-to-decode latency.
enum RTCPSenderReport {
    static let size = 28

    static func write(_ out: UnsafeMutableRawBufferPointer, stream: RTPStream) {
        out[0] = 0x80
        out[1] = 200
        out.storeBE16(2, UInt16(size / 4 - 1))
        out.storeBE32(4, stream.ssrc)
        // Capture time (CLOCK_MONOTONIC) → wall clock → NTP (seconds since 1900).
        var mono = timespec(), real = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_REALTIME, &real)
        let monoNs = Int64(mono.tv_sec) * 1_000_000_000 + Int64(mono.tv_nsec)
        let realNs = Int64(real.tv_sec) * 1_000_000_000 + Int64(real.tv_nsec)
        let captureRealNs = realNs - (monoNs - (stream.lastCaptureNs > 0 ? stream.lastCaptureNs : monoNs))
        let seconds = UInt64(captureRealNs / 1_000_000_000) + 2_208_988_800
        let fraction = UInt64(captureRealNs % 1_000_000_000) << 32 / 1_000_000_000
        out.storeBE32(8, UInt32(truncatingIfNeeded: seconds))
        out.storeBE32(12, UInt32(truncatingIfNeeded: fraction))
        out.storeBE32(16, stream.lastTimestamp)
        out.storeBE32(20, stream.packets)
        out.storeBE32(24, stream.octets)
    }
}
