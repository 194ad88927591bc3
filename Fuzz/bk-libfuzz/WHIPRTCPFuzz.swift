import BroadcastKit

/// An endpoint's compound RTCP packet (after SRTCP) through RTCPFeedback.walk, as the
/// `bk-whip-rx` thread reads it, with each report block then taken by an RTPDeliveryMeter that
/// sent 300 video packets of 1000 bytes, 5 ms apart (1600 kbit/s). The first 4 input bytes are
/// the video SSRC. Oracles:
/// - bounded: at most 17 NACKed packets per 4 bytes and one item per 4 bytes otherwise;
/// - deterministic: a second walk visits the same items;
/// - a report block's fields stay in range (fraction 0...255, cumulative loss 24-bit signed);
/// - no report, however hostile, makes the meter measure more than was sent (1600 kbit/s).
enum WHIPRTCPFuzz {
    static let sentKbps = 1000 * 8 / 5  // 1000 bytes every 5 ms

    static func run(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 4 else { return }
        let ssrc = data.loadBE32(0)
        let packet = UnsafeRawBufferPointer(rebasing: data[4...])
        var first: [RTCPFeedback.Item] = []
        RTCPFeedback.walk(packet, videoSSRC: ssrc) { first.append($0) }
        var second: [RTCPFeedback.Item] = []
        RTCPFeedback.walk(packet, videoSSRC: ssrc) { second.append($0) }
        if first != second { FuzzTarget.fail("whip-rtcp", "two walks of the same packet differ") }
        var nacks = 0
        for item in first { if case .nack = item { nacks += 1 } }
        if nacks > 17 * (packet.count / 4) || first.count - nacks > packet.count / 4 {
            FuzzTarget.fail("whip-rtcp", "\(first.count) items (\(nacks) NACKs) from \(packet.count) bytes")
        }
        let meter = RTPDeliveryMeter()
        for i in 0..<300 { meter.videoSent(sequence: UInt16(i), bytes: 1000, nowNs: Int64(i) * 5_000_000) }
        for item in first {
            guard case .reportBlock(let fraction, let highest, let lost) = item else { continue }
            if !(0...255).contains(fraction) || !(-(1 << 23)...((1 << 23) - 1)).contains(lost) {
                FuzzTarget.fail("whip-rtcp", "report block out of range: fraction \(fraction), lost \(lost)")
            }
            // Rounding: one kbit/s.
            if let kbps = meter.take(highest: highest, cumulativeLost: lost), kbps < 0 || kbps > sentKbps + 1 {
                FuzzTarget.fail("whip-rtcp", "a report made the meter measure \(kbps) kbit/s of \(sentKbps) sent")
            }
        }
    }
}
