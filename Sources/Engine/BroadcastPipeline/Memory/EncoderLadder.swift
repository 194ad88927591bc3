import BroadcastCore

/// The x264 configurations a session tries, heaviest first, when the memory plan does not fit.
///
/// Order (for a requested preset that refines to sub-pel, e.g. veryfast, with 2 pending frames):
/// 1. the requested settings;
/// 2. the requested preset made lean (`X264Tuning.lean`): no sub-pel refinement (weighted prediction
///    is off in every step: `X264Encoder.configure`) — the half-pel planes per reference are x264's
///    one large optional cost — with
///    CABAC, deblocking, 8x8 DCT, intra partitions and AQ kept, and trellis quantization added
///    (CPU, no memory: it wins back most of the quality sub-pel was worth, see `X264Tuning.lean`);
/// 3. the lean configuration with 1 pending video frame;
/// 4. ultrafast with 1 pending frame, the last resort.
///
/// Why lean keeps its tools before a lighter preset is tried: every preset but ultrafast refines
/// to sub-pel, so it needs the half-pel planes the lean step already dropped; and ultrafast saves
/// only about 0.4 B/px (0.8 MB at 1080p) over lean while losing ~0.8 dB, less than one pending
/// frame (3 MB at 1080p). "ultrafast with 2 pending frames" would sit between steps 2 and 3 in
/// memory, but it is skipped: one frame less of burst slack costs less than that quality.
///
/// Pure: the session opens x264 for each step it tries and decides with the measured plan.
package enum EncoderLadder {
    /// One configuration to try.
    package struct Step: Sendable, Equatable {
        /// What x264 is opened with.
        package var settings: VideoEncoderSettings
        /// Frames the video lane may hold ahead of the encoder.
        package var pendingFrames: Int
        /// Short human description, e.g. "veryfast-lean (no sub-pel; cabac, deblock, 8x8dct, AQ kept; trellis)".
        package var label: String
    }

    static let leanSuffix = "-lean (no sub-pel; cabac, deblock, 8x8dct, AQ kept; trellis)"

    /// The steps for `requested`, ordered by planned memory, heaviest first. Without
    /// `allowDowngrade` only the requested settings.
    package static func steps(requested: VideoEncoderSettings, pendingFrames: Int,
                              allowDowngrade: Bool) -> [Step] {
        var steps = [Step(settings: requested, pendingFrames: pendingFrames, label: label(requested))]
        guard allowDowngrade else { return steps }
        if requested.subpelRefinement > 0 {
            var lean = requested
            lean.tuning = .lean
            steps.append(Step(settings: lean, pendingFrames: pendingFrames, label: requested.preset + leanSuffix))
        }
        // One pending frame for the configuration reached so far, then ultrafast on top of it.
        if pendingFrames > 1, let last = steps.last {
            steps.append(Step(settings: last.settings, pendingFrames: 1, label: last.label + ", 1 pending frame"))
        }
        if requested.preset != "ultrafast" || !requested.tuning.isEmpty {
            var ultrafast = requested
            ultrafast.preset = "ultrafast"
            ultrafast.tuning = .none
            let pending = min(pendingFrames, 1)
            steps.append(Step(settings: ultrafast, pendingFrames: pending,
                              label: pendingFrames > 1 ? "ultrafast, 1 pending frame" : "ultrafast"))
        }
        return steps
    }

    /// The index of the first step `fits` accepts, trying them in order and stopping there;
    /// nil when none fits (the caller refuses to start).
    package static func choose(_ steps: [Step], fits: (Step) -> Bool) -> Int? {
        steps.firstIndex(where: fits)
    }

    /// "veryfast", or "veryfast + tuning" for settings that carry an explicit tuning.
    package static func label(_ v: VideoEncoderSettings) -> String {
        if v.tuning.isEmpty { return v.preset }
        if v.tuning == .lean { return v.preset + leanSuffix }
        return v.preset + " (tuned)"
    }
}
