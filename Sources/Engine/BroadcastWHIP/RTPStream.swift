import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// One outgoing RTP stream (RFC 3550): its SSRC, payload type, clock, sequence numbers and the
/// counters and timing a sender report needs.
struct RTPStream {
    let ssrc: UInt32
    var payloadType: UInt8
    let clockRate: Int64
    var sequence: UInt16 = UInt16.random(in: 0...UInt16.max)
    /// A random start (RFC 3550 §5.1) added to media time.
    let timestampOffset = UInt32.random(in: 0...UInt32.max)
    var packets: UInt32 = 0
    var octets: UInt32 = 0
    /// The last packet's RTP time and the capture time (CLOCK_MONOTONIC) of its media, for the
    /// sender report's mapping.
    var lastTimestamp: UInt32 = 0
    var lastCaptureNs: Int64 = 0
    var lastReportNs: Int64 = 0

    init(ssrc: UInt32, payloadType: UInt8, clockRate: Int64) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
    }

    func timestamp(ms: UInt32, compositionMs: Int32 = 0) -> UInt32 {
        let ticks = (Int64(ms) + Int64(compositionMs)) * clockRate / 1000
        return timestampOffset &+ UInt32(truncatingIfNeeded: ticks)
    }

    /// Writes the 12-byte header (its X bit when a header extension follows) and advances the
    /// sequence number.
    mutating func writeHeader(_ out: UnsafeMutableRawBufferPointer, timestamp: UInt32, marker: Bool,
                                      hasExtension: Bool = false) {
        out[0] = hasExtension ? 0x90 : 0x80
        out[1] = (marker ? 0x80 : 0) | payloadType
        out.storeBE16(2, sequence)
        out.storeBE32(4, timestamp)
        out.storeBE32(8, ssrc)
        sequence &+= 1
    }
}
