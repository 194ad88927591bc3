/// Geometry of the large 7-segment digits the test source burns in (a human-readable
/// frame counter; `CounterStrip` is the machine-readable one).
struct SevenSegment {
    /// Segments lit per digit, bit 0 = a (top) ... bit 6 = g (middle), the usual lettering.
    static let masks: [UInt8] = [0x3F, 0x06, 0x5B, 0x4F, 0x66, 0x6D, 0x7D, 0x07, 0x7F, 0x6F]
    /// Digits drawn (frame index modulo 10^6, with leading zeros).
    static let digitCount = 6

    /// Digit height; a multiple of 4 so every segment edge lands on an even pixel (I420 chroma).
    let height: Int
    let width: Int
    let thickness: Int
    let gap: Int

    init(frameHeight: Int) {
        height = max(16, frameHeight / 8 / 4 * 4)
        width = height / 2
        thickness = max(4, height / 10 / 4 * 4)
        gap = thickness * 2
    }

    /// The rectangle (x, y, w, h) of segment `s` relative to the digit's top-left corner.
    func segment(_ s: Int) -> (Int, Int, Int, Int) {
        let half = height / 2
        switch s {
        case 0: return (0, 0, width, thickness)
        case 1: return (width - thickness, 0, thickness, half)
        case 2: return (width - thickness, half, thickness, half)
        case 3: return (0, height - thickness, width, thickness)
        case 4: return (0, half, thickness, half)
        case 5: return (0, 0, thickness, half)
        default: return (0, half - thickness / 2, width, thickness)
        }
    }

    /// Total width of all digits.
    var totalWidth: Int { SevenSegment.digitCount * (width + gap) - gap }
}
