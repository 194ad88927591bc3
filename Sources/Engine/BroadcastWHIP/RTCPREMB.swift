import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Receiver Estimated Maximum Bitrate (draft-alvestrand-rmcat-remb): a payload-specific feedback
/// packet (PT 206, FMT 15) whose FCI is "REMB", the SSRC count, a 6-bit exponent and 18-bit
/// mantissa (bit/s = mantissa << exponent), then the SSRCs the estimate covers.
enum RTCPREMB {
    /// Header (4), sender SSRC (4), media SSRC (4), "REMB" (4), count + bitrate (4).
    static let minimumBytes = 20

    /// The estimate in bit/s of the one RTCP packet `packet` (exactly its length from the header),
    /// when it is a REMB that lists `ssrc` (any REMB when nil). nil for anything else, including a
    /// count of SSRCs that runs past the packet. An exponent that overflows saturates.
    static func bitsPerSecond(_ packet: UnsafeRawBufferPointer, listing ssrc: UInt32?) -> UInt64? {
        guard packet.count >= minimumBytes, packet[0] >> 6 == 2, packet[0] & 0x1F == 15, packet[1] == 206,
              (Int(packet.loadBE16(2)) + 1) * 4 <= packet.count,
              packet[12] == 0x52, packet[13] == 0x45, packet[14] == 0x4D, packet[15] == 0x42 else { return nil }
        let length = (Int(packet.loadBE16(2)) + 1) * 4
        let count = Int(packet[16])
        guard 20 + 4 * count <= length else { return nil }
        if let ssrc {
            var listed = false
            for i in 0..<count where packet.loadBE32(20 + 4 * i) == ssrc { listed = true }
            guard listed else { return nil }
        }
        let exponent = UInt64(packet[17] >> 2)
        let mantissa = UInt64(packet[17] & 0x03) << 16 | UInt64(packet[18]) << 8 | UInt64(packet[19])
        // 18 bits of mantissa: an exponent over 46 would pass 2^64.
        if mantissa != 0 && exponent > 45 { return UInt64.max }
        return mantissa << exponent
    }
}
