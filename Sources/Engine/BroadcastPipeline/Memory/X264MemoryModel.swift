import BroadcastCore

/// x264's working set for the memory plan: the resident memory its first encodes add beyond what
/// it holds right after `x264_encoder_open` (reference, current and lowres frames, half-pel planes,
/// analysis and bitstream buffers), as measured data.
///
/// The table is measured, not guessed: `tools/bench/x264model.py` (the `x264model` section of
/// `scripts/bench`) runs `bk-bench x264-memory` once per configuration and resolution, each in its
/// own process (moving noise content, zerolatency, 2 sliced threads, 1 reference; the larger of
/// two runs), and rewrites the rows between the markers. Between measured sizes the plan
/// interpolates linearly in pixels; beyond them it extends the nearest segment.
///
/// Weighted prediction is off (`X264Encoder.configure`); a tuning that turns it back on adds
/// `weightedPlaneBytes`. (The subpel rows were first measured while veryfast still ran with its
/// `weightp` 1; measured again with it off, on 2026-12-03, every row is within 0.5% of the table:
/// moving noise never touched the weighted plane, a fade does.)
enum X264MemoryModel {
    /// What decides x264's working set: whether it keeps half-pel planes per reference.
    enum Configuration: String, Sendable {
        /// Any preset that refines to sub-pel (subme >= 1): superfast measured within 0.2% of veryfast.
        case subpel
        /// `X264Tuning.lean`: full-pel only, with CABAC, deblocking, 8x8 DCT, intra partitions, AQ.
        case lean
        /// Plain ultrafast.
        case ultrafast
    }

    struct Row: Sendable {
        var configuration: Configuration
        var width: Int
        var height: Int
        var workingBytes: Int
    }

    static let measured: [Row] = [
        // BEGIN measured table (tools/bench/x264model.py --write)
        .init(configuration: .subpel, width: 640, height: 360, workingBytes: 5574656),
        .init(configuration: .subpel, width: 854, height: 480, workingBytes: 8663040),
        .init(configuration: .subpel, width: 1280, height: 720, workingBytes: 17670144),
        .init(configuration: .subpel, width: 1920, height: 1080, workingBytes: 38027264),
        .init(configuration: .subpel, width: 2560, height: 1440, workingBytes: 62844928),
        .init(configuration: .lean, width: 640, height: 360, workingBytes: 3563520),
        .init(configuration: .lean, width: 854, height: 480, workingBytes: 5484544),
        .init(configuration: .lean, width: 1280, height: 720, workingBytes: 11001856),
        .init(configuration: .lean, width: 1920, height: 1080, workingBytes: 23388160),
        .init(configuration: .lean, width: 2560, height: 1440, workingBytes: 38518784),
        .init(configuration: .ultrafast, width: 640, height: 360, workingBytes: 3362816),
        .init(configuration: .ultrafast, width: 854, height: 480, workingBytes: 5226496),
        .init(configuration: .ultrafast, width: 1280, height: 720, workingBytes: 10571776),
        .init(configuration: .ultrafast, width: 1920, height: 1080, workingBytes: 22478848),
        .init(configuration: .ultrafast, width: 2560, height: 1440, workingBytes: 36990976),
        // END measured table
    ]

    static func configuration(_ v: VideoEncoderSettings) -> Configuration {
        if v.subpelRefinement > 0 { return .subpel }
        return v.preset == "ultrafast" && v.tuning.isEmpty ? .ultrafast : .lean
    }

    /// Planned working set for `v`: the measured rows of its configuration, interpolated in pixels,
    /// plus one decoded frame per extra reference and per-thread frames without sliced threads
    /// (the table is for 1 reference and sliced threads).
    static func workingBytes(_ v: VideoEncoderSettings) -> Int {
        let px = v.width * v.height
        let rows = measured.filter { $0.configuration == configuration(v) }
            .sorted { $0.width * $0.height < $1.width * $1.height }
        var base = 0
        if rows.count == 1 {
            base = rows[0].workingBytes * px / max(1, rows[0].width * rows[0].height)
        } else if rows.count > 1 {
            // The segment that holds px, or the nearest one at either end.
            var i = 0
            while i < rows.count - 2 && px > rows[i + 1].width * rows[i + 1].height { i += 1 }
            let p0 = rows[i].width * rows[i].height, p1 = rows[i + 1].width * rows[i + 1].height
            let b0 = rows[i].workingBytes, b1 = rows[i + 1].workingBytes
            base = b0 + (b1 - b0) * (px - p0) / max(1, p1 - p0)
        }
        // One more decoded frame per extra reference (the plan's earlier per-pixel estimate; the
        // table is for the 1 reference every session uses).
        let refs = Double(max(1, v.referenceFrames) - 1) * 2.4
        let threads = v.slicedThreads ? 0 : Double(max(0, v.threads - 1)) * 4
        return max(0, base) + Int(Double(px) * (refs + threads)) + weightedPlaneBytes(v)
    }

    /// Weighted prediction's buffers, when a tuning turns it on (the library keeps it off, and the
    /// table is measured without it): per encoder thread one padded luma plane per weighted
    /// reference (1 for `weightp` 1, 2 for 2), as x264's source allocates them at open (luma
    /// padding 32 pixels each side). They become resident only at the first weighted frame,
    /// whenever content brings one, so they are planned in full from that layout, not measured.
    static func weightedPlaneBytes(_ v: VideoEncoderSettings) -> Int {
        guard v.weightedPrediction > 0 else { return 0 }
        let padding = 32                                       // x264's PADH and PADV, luma
        let stride = ((v.width + 15) / 16 * 16 + 2 * padding + 63) / 64 * 64
        let rows = (v.height + 15) / 16 * 16 + 2 * padding
        return stride * rows * min(2, v.weightedPrediction) * max(1, v.threads)
    }
}
