/// The part of the moving test pattern that makes the encoder work: a full-width band (rows
/// H/3 to H/2) of fresh noise every frame over a vertical gradient that scrolls down.
///
/// Why noise: motion search cannot predict it, so x264 spends its whole target bitrate, as
/// it would on real content (the bars alone encode to almost nothing). Why a gradient under
/// it: the band's mean luma stays near 120 on every frame, far below the white flash, so the
/// flash detector (mean luma of the whole frame jumping to ~235) is neither triggered nor
/// masked by the band.
///
/// Size and strength were measured (20 s, `--no-publish --record`): this band already makes
/// x264 spend its whole target (720p veryfast ~2.5 Mbps, 1080p ultrafast ~4.5 Mbps); a
/// bigger or stronger one spends no more bits and only costs more encoder CPU.
///
/// Cost: one xorshift step per 8 bytes written, no allocation. Frame n's content depends
/// only on n, so a frame can be re-rendered and compared byte for byte.
struct MovingRegion {
    /// Noise added to every byte: 0...31 (mask applied to each byte of a 64-bit draw).
    static let lumaNoiseMask: UInt64 = 0x1F1F_1F1F_1F1F_1F1F
    /// Chroma noise is weaker (0...15 around 120), so colours stay muted.
    static let chromaNoiseMask: UInt64 = 0x0F0F_0F0F_0F0F_0F0F
    /// Gradient base: 24 + a triangle wave of height 127 whose period is the band's height,
    /// so base + noise stays within 24...182 (inside limited-range luma) and the band always
    /// holds exactly one period: its mean luma (~103) is the same on every frame.
    static let baseLow = 24
    static let baseHeight = 127
    /// Rows the gradient moves per frame.
    static let scrollPerFrame = 3

    /// First row of the band (even) and its height (even).
    let top: Int
    let rows: Int

    /// The band for a frame whose colour bars end at row `barsRows`: the third quarter of
    /// the bars, which keeps the counter strip and the digits in the top corner on a plain
    /// background.
    init(barsRows: Int) {
        top = (barsRows / 2) & ~1
        rows = max(0, ((barsRows - top) / 2) & ~1)
    }

    /// The gradient's base value for band row `r` (0..<rows) of frame `index`.
    @inline(__always)
    func base(bandRow r: Int, frame index: Int64) -> UInt8 {
        let period = rows
        let half = max(1, period / 2)
        let shift = Int(index % Int64(period)) * MovingRegion.scrollPerFrame % period
        let x = (r + period - shift) % period
        let tri = x < half ? x : period - 1 - x
        return UInt8(MovingRegion.baseLow + min(half - 1, tri) * MovingRegion.baseHeight / max(1, half - 1))
    }

    /// A per-frame seed (SplitMix64 finaliser of the index): consecutive frames' noise is unrelated.
    @inline(__always)
    static func seed(frame index: Int64) -> UInt64 {
        var z = UInt64(bitPattern: index) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return z == 0 ? 0x5EED : z
    }

    /// Paints the band into `canvas` (I420: luma noise on the gradient, weak chroma noise;
    /// BGRx: the same bytes in every channel, i.e. grey-ish colour noise).
    func paint(_ canvas: FrameCanvas, frame index: Int64) {
        guard rows > 0 else { return }
        var state = MovingRegion.seed(frame: index)
        let rowBytes = canvas.isI420 ? canvas.width : canvas.width * 4
        for row in top..<(top + rows) {
            let base = base(bandRow: row - top, frame: index)
            MovingRegion.fillRow(canvas.y + row * canvas.strideY, count: rowBytes,
                                 base: base, mask: MovingRegion.lumaNoiseMask, state: &state)
        }
        guard canvas.isI420 else { return }
        let chromaWidth = canvas.width / 2
        for row in (top / 2)..<((top + rows) / 2) {
            MovingRegion.fillRow(canvas.u + row * canvas.strideUV, count: chromaWidth,
                                 base: 120, mask: MovingRegion.chromaNoiseMask, state: &state)
            MovingRegion.fillRow(canvas.v + row * canvas.strideUV, count: chromaWidth,
                                 base: 120, mask: MovingRegion.chromaNoiseMask, state: &state)
        }
    }

    /// Writes `count` bytes of base + (noise & mask), 8 at a time. base + mask <= 255, so
    /// the per-byte additions never carry into the neighbouring byte.
    @inline(__always)
    static func fillRow(_ p: UnsafeMutablePointer<UInt8>, count: Int, base: UInt8, mask: UInt64,
                        state: inout UInt64) {
        let add = UInt64(base) &* 0x0101_0101_0101_0101
        let raw = UnsafeMutableRawPointer(p)
        var i = 0
        while i + 8 <= count {
            // xorshift64: three shifts per 8 pixels.
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            raw.storeBytes(of: ((state & mask) &+ add).littleEndian, toByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < count {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            p[i] = UInt8(truncatingIfNeeded: (state & mask) &+ UInt64(base))
            i += 1
        }
    }
}
