import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// What an endpoint's compound RTCP packet (after SRTCP) asks of the sender, item by item: the
/// one parser of the endpoint's feedback, apart from the thread that reads it, so it can be fuzzed
/// (`bk-libfuzz whip-rtcp`). Bounded by the packet: a length that runs past it ends the walk, and
/// each item is read only inside its own packet's length.
package enum RTCPFeedback {
    package enum Item: Equatable {
        /// A receiver report block (RR, or one in an SR) about the video SSRC: the fraction lost
        /// (x/256), the highest sequence number received (its low 16 bits) and the cumulative
        /// number lost (24-bit signed: duplicates can make it negative).
        case reportBlock(fractionLost: Int, highest: UInt16, cumulativeLost: Int)
        /// A REMB listing the video SSRC (any REMB when there is no video SSRC): bit/s.
        case estimate(bitsPerSecond: UInt64)
        /// PLI or FIR.
        case keyframeRequest
        /// One generic NACK's packet (a PID, or a bit of its BLP).
        case nack(sequence: UInt16)
    }

    /// Calls `visit` with each item of `b`, in order. Items about other SSRCs are skipped.
    package static func walk(_ b: UnsafeRawBufferPointer, videoSSRC: UInt32?, _ visit: (Item) -> Void) {
        var at = 0
        while at + 4 <= b.count {
            let fmt = b[at] & 0x1F, type = b[at + 1]
            let length = (Int(b.loadBE16(at + 2)) + 1) * 4
            guard at + length <= b.count else { return }
            if type == 200 || type == 201 {
                // Report blocks follow the 8-byte header (and an SR's 20 bytes of sender info).
                var block = at + (type == 200 ? 28 : 8)
                for _ in 0..<Int(fmt) where block + 24 <= at + length {
                    if let ssrc = videoSSRC, b.loadBE32(block) == ssrc {
                        let lost = Int32(bitPattern: UInt32(b[block + 5]) << 24 | UInt32(b[block + 6]) << 16
                                         | UInt32(b[block + 7]) << 8) >> 8
                        visit(.reportBlock(fractionLost: Int(b[block + 4]),
                                           highest: UInt16(truncatingIfNeeded: b.loadBE32(block + 8)),
                                           cumulativeLost: Int(lost)))
                    }
                    block += 24
                }
            } else if type == 206 && fmt == 15 {
                if let bps = RTCPREMB.bitsPerSecond(UnsafeRawBufferPointer(rebasing: b[at..<(at + length)]), listing: videoSSRC) {
                    visit(.estimate(bitsPerSecond: bps))
                }
            } else if type == 206 && (fmt == 1 || fmt == 4) && length >= 12 {
                visit(.keyframeRequest)
            } else if type == 205 && fmt == 1 && length >= 16 {
                var f = at + 12
                while f + 4 <= at + length {
                    let pid = b.loadBE16(f), mask = b.loadBE16(f + 2)
                    visit(.nack(sequence: pid))
                    for bit in 0..<16 where mask & (1 << bit) != 0 { visit(.nack(sequence: pid &+ UInt16(bit + 1))) }
                    f += 4
                }
            }
            at += length
        }
    }
}
