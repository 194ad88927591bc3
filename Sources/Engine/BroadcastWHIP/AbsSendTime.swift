import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The abs-send-time RTP header extension (http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time):
/// the send time as 24-bit 6.18 fixed-point seconds (it wraps every 64 s), carried in a one-byte
/// header extension (RFC 8285). The receiver's delay-based estimator (REMB) reads the spacing of
/// these times against the spacing of arrivals, so any steady clock will do: CLOCK_MONOTONIC.
enum AbsSendTime {
    static let uri = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    /// The extension id we offer (aiortc's own choice too; the answer may name another).
    static let offeredID = 3
    /// Bytes the extension adds after the 12-byte RTP header: the 0xBEDE profile, a length of one
    /// word, then the element (id/length byte and three value bytes).
    static let extensionBytes = 8

    /// `ns` as 6.18 fixed-point seconds, modulo 64 s.
    static func encode(ns: Int64) -> UInt32 {
        let t = UInt64(bitPattern: ns)
        let seconds = t / 1_000_000_000, fraction = t % 1_000_000_000
        return UInt32(truncatingIfNeeded: (seconds << 18) + (fraction << 18) / 1_000_000_000) & 0xFF_FFFF
    }

    /// Writes the extension block at `out[12..<20]` (the caller sets the header's X bit).
    static func write(_ out: UnsafeMutableRawBufferPointer, id: Int, ns: Int64) {
        out[12] = 0xBE
        out[13] = 0xDE
        out[14] = 0
        out[15] = 1
        out[16] = UInt8(truncatingIfNeeded: id << 4) | 2  // length - 1
        update(out, ns: ns)
    }

    /// Rewrites the time of a packet written by `write` (a retransmission leaves now).
    static func update(_ out: UnsafeMutableRawBufferPointer, ns: Int64) {
        let v = encode(ns: ns)
        out[17] = UInt8(truncatingIfNeeded: v >> 16)
        out[18] = UInt8(truncatingIfNeeded: v >> 8)
        out[19] = UInt8(truncatingIfNeeded: v)
    }
}
