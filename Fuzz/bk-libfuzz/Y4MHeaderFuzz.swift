import BroadcastCapture

/// The first line of a Y4M stream (what Y4MSource hands to Y4MHeader.parse: the bytes before the
/// first newline, at most Y4MHeader.maxLength). Oracles: an accepted header is within the
/// documented limits and round-trips through its own text; a refusal is one line.
enum Y4MHeaderFuzz {
    static func run(_ data: UnsafeRawBufferPointer) {
        let end = min(data.firstIndex(of: 0x0A) ?? data.count, Y4MHeader.maxLength)
        let line = Array(data[..<end])
        do {
            let h = try Y4MHeader.parse(line)
            guard (1...Y4MHeader.maxDimension).contains(h.width), (1...Y4MHeader.maxDimension).contains(h.height),
                  h.frameRateNumerator > 0, h.frameRateDenominator > 0,
                  h.frameRateNumerator <= 1000 * h.frameRateDenominator, h.frameByteCount > 0 else {
                FuzzTarget.fail("y4m-header", "accepted out-of-range header \(h) from \(String(decoding: line, as: UTF8.self).debugDescription)")
            }
            let text = "YUV4MPEG2 W\(h.width) H\(h.height) F\(h.frameRateNumerator):\(h.frameRateDenominator) C\(h.colourSpace)"
            guard let again = try? Y4MHeader.parse(Array(text.utf8)), again == h else {
                FuzzTarget.fail("y4m-header", "\(h) does not round-trip through \(text.debugDescription)")
            }
        } catch {
            let message = "\(error)"
            if message.contains("\n") {
                FuzzTarget.fail("y4m-header", "refusal is not one line: \(message.debugDescription)")
            }
        }
    }
}
