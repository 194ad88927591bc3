import BroadcastCore

/// Explicit x264 analysis tools applied on top of the preset (after `x264_param_default_preset`,
/// before the profile). A nil field keeps the preset's value.
///
/// Why it exists: x264's presets bundle tools that cost memory (sub-pel refinement keeps three
/// half-pel planes per reference frame, weighted prediction a weighted copy of the reference)
/// with tools that cost none (CABAC, deblocking, the 8x8 transform, intra partitions, AQ).
/// Under a tight memory budget `lean` drops only the former, which keeps most of the quality
/// that a whole lighter preset would throw away.
public struct X264Tuning: Sendable, Equatable {
    /// x264 motion search (`--me`).
    public enum MotionSearch: String, Sendable {
        case diamond = "dia", hexagon = "hex", unevenMultiHexagon = "umh"
    }

    /// `--subme`: 0 is full-pel only (no half-pel planes); 1 and up refine to sub-pel.
    public var subpelRefinement: Int?
    /// `--me`.
    public var motionSearch: MotionSearch?
    /// `--weightp`: 0 off, 1 simple, 2 smart. Non-zero keeps a weighted luma plane per thread.
    public var weightedPrediction: Int?
    /// CABAC entropy coding instead of CAVLC (`--no-cabac` when false).
    public var cabac: Bool?
    /// The in-loop deblocking filter, at strength 0:0 when on.
    public var deblock: Bool?
    /// The adaptive 8x8 transform (`--8x8dct`); High profile.
    public var transform8x8: Bool?
    /// Intra 4x4 and 8x8 partitions in I and P frames (`--partitions i4x4,i8x8`, kept with the
    /// preset's inter partitions). i8x8 needs `transform8x8`.
    public var intraPartitions: Bool?
    /// `--aq-mode`: 0 off, 1 variance AQ, 2 auto-variance.
    public var adaptiveQuantization: Int?
    /// `--trellis`: 0 off, 1 on the final encode of each macroblock, 2 in every mode decision.
    /// Rate-distortion optimal quantization: CPU only, no memory; needs CABAC.
    public var trellis: Int?

    public init(subpelRefinement: Int? = nil, motionSearch: MotionSearch? = nil, weightedPrediction: Int? = nil,
                cabac: Bool? = nil, deblock: Bool? = nil, transform8x8: Bool? = nil, intraPartitions: Bool? = nil,
                adaptiveQuantization: Int? = nil, trellis: Int? = nil) {
        self.subpelRefinement = subpelRefinement
        self.motionSearch = motionSearch
        self.weightedPrediction = weightedPrediction
        self.cabac = cabac
        self.deblock = deblock
        self.transform8x8 = transform8x8
        self.intraPartitions = intraPartitions
        self.adaptiveQuantization = adaptiveQuantization
        self.trellis = trellis
    }

    /// The preset as it is.
    public static let none = X264Tuning()

    /// The memory-free tools kept, the memory-costly ones dropped: full-pel motion only and no
    /// weighted prediction, with CABAC, deblocking, 8x8 DCT, intra partitions and variance AQ
    /// stated explicitly so the result does not depend on the preset underneath; plus trellis
    /// quantization (veryfast has none), which costs CPU but no memory and wins back most of
    /// what dropping sub-pel lost. Measured with ffmpeg's libx264 at 1080p 4500 kbps, 180 frames
    /// of testsrc2 + life, PSNR avg: veryfast 26.38 dB, lean without trellis 26.15 (-0.23),
    /// with trellis 26.30 (-0.08); inter 8x8 partitions and umh search added under 0.03 dB.
    public static let lean = X264Tuning(subpelRefinement: 0, weightedPrediction: 0, cabac: true, deblock: true,
                                        transform8x8: true, intraPartitions: true, adaptiveQuantization: 1,
                                        trellis: 1)

    /// Whether every field is nil (the preset is used unchanged).
    public var isEmpty: Bool { self == .none }
}
