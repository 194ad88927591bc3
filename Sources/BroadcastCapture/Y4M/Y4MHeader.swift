/// The stream header of a YUV4MPEG2 file ("YUV4MPEG2 W320 H240 F25:1 Ip A1:1 C420jpeg\n").
///
/// Only 8-bit 4:2:0 progressive is accepted (C420, C420jpeg, C420paldv, C420mpeg2, or no C tag;
/// `Ip`, `I?` or no I tag). Interlaced input (`It`, `Ib`, `Im`) is refused: its fields would be
/// encoded as one progressive picture, combed wherever it moves. Aspect and X tags are read past.
/// Header bytes quoted in an error are escaped (`PrintableBytes`).
public struct Y4MHeader: Sendable, Equatable {
    public var width: Int
    public var height: Int
    /// Frame rate numerator (frames per `frameRateDenominator` seconds).
    public var frameRateNumerator: Int
    public var frameRateDenominator: Int
    /// The C tag as written ("420jpeg"), or "420" when absent.
    public var colourSpace: String

    /// Longest header line accepted, in bytes.
    public static let maxLength = 1024
    /// Largest width or height accepted.
    public static let maxDimension = 8192

    /// Bytes of one frame's payload (Y, then U, then V, tightly packed).
    public var frameByteCount: Int { width * height + 2 * chromaByteCount }
    /// Bytes of one chroma plane.
    public var chromaByteCount: Int { ((width + 1) / 2) * ((height + 1) / 2) }

    public init(width: Int, height: Int, frameRateNumerator: Int, frameRateDenominator: Int,
                colourSpace: String = "420") {
        self.width = width
        self.height = height
        self.frameRateNumerator = frameRateNumerator
        self.frameRateDenominator = frameRateDenominator
        self.colourSpace = colourSpace
    }

    private static let accepted: Set<String> = ["420", "420jpeg", "420paldv", "420mpeg2"]

    /// Parses one header line, without its terminating newline.
    public static func parse(_ line: [UInt8]) throws(CaptureError) -> Y4MHeader {
        func bad(_ message: String) -> CaptureError { CaptureError(.badInput, "y4m: \(message)") }
        let signature = Array("YUV4MPEG2".utf8)
        guard line.starts(with: signature),
              line.count == signature.count || line[signature.count] == UInt8(ascii: " ") else {
            throw bad("not a YUV4MPEG2 stream (missing 'YUV4MPEG2 ' signature)")
        }
        var width: Int?, height: Int?, rate: (Int, Int)?
        var colour = "420"
        for token in line[signature.count...].split(separator: UInt8(ascii: " ")) {
            let tag = token.first!
            // Quoted in messages: escaped, so a NUL or ESC in a header never reaches a terminal raw.
            let value = PrintableBytes.escape(token.dropFirst())
            switch tag {
            case UInt8(ascii: "W"):
                guard let w = Int(value), w > 0, w <= maxDimension else {
                    throw bad("bad width 'W\(value)' (must be 1..\(maxDimension))")
                }
                width = w
            case UInt8(ascii: "H"):
                guard let h = Int(value), h > 0, h <= maxDimension else {
                    throw bad("bad height 'H\(value)' (must be 1..\(maxDimension))")
                }
                height = h
            case UInt8(ascii: "F"):
                let parts = value.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let num = Int(parts[0]), let den = Int(parts[1]),
                      num > 0, den > 0, num <= 1_000_000, den <= 1_000_000, num <= 1000 * den else {
                    throw bad("bad frame rate 'F\(value)' (expected num:den, both > 0, at most 1000 fps)")
                }
                rate = (num, den)
            case UInt8(ascii: "C"):
                guard accepted.contains(value) else {
                    throw bad("unsupported colour space C\(value) (only 8-bit 4:2:0)")
                }
                colour = value
            case UInt8(ascii: "I"):
                switch value {
                case "p", "?": continue
                case "t", "b", "m":
                    let what = value == "t" ? "top field first" : value == "b" ? "bottom field first" : "mixed"
                    throw bad("interlaced input (I\(value): \(what)) is not supported; deinterlace it first "
                              + "(e.g. ffmpeg -vf yadif)")
                default: throw bad("bad interlacing 'I\(value)' (expected Ip, It, Ib, Im or I?)")
                }
            case UInt8(ascii: "A"), UInt8(ascii: "X"):
                continue
            default:
                throw bad("unknown header tag '\(PrintableBytes.escape(token))'")
            }
        }
        guard let width else { throw bad("header has no width (W)") }
        guard let height else { throw bad("header has no height (H)") }
        guard let rate else { throw bad("header has no frame rate (F)") }
        return Y4MHeader(width: width, height: height, frameRateNumerator: rate.0,
                         frameRateDenominator: rate.1, colourSpace: colour)
    }
}
