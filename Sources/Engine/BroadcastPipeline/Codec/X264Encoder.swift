import CX264Shim
import CX264
import Synchronization
import BroadcastCore

/// H.264 encoder on libx264: AVCC output (4-byte NAL lengths), no B-frames, no lookahead,
/// a fixed GOP of `fps * keyframeIntervalSeconds`, ABR under a VBV cap.
///
/// `encode`/`flush` run on the video lane; `requestBitrate` and `lastAppliedBitrateKbps` may be
/// used from any thread.
package final class X264Encoder: VideoEncoder, @unchecked Sendable {
    package let settings: VideoEncoderSettings
    package var decoderConfigurationRecord: UnsafeRawBufferPointer { UnsafeRawBufferPointer(record) }

    /// The bitrate (kbps) the encoder is currently configured for; for stats.
    var lastAppliedBitrateKbps: Int { appliedBitrate.load(ordering: .relaxed) }

    private let handle: OpaquePointer
    /// Kept for x264_encoder_parameters/reconfig so a bitrate change allocates nothing.
    private let param: UnsafeMutablePointer<x264_param_t>
    private let pictureIn: UnsafeMutablePointer<x264_picture_t>
    private let pictureOut: UnsafeMutablePointer<x264_picture_t>
    private let logSink: UnsafeMutablePointer<bk_x264_log_buffer>
    private let record: UnsafeMutableRawBufferPointer
    /// 0 = nothing pending; otherwise the kbps asked for by `requestBitrate`.
    private let pendingBitrate = Atomic<Int>(0)
    private let appliedBitrate: Atomic<Int>

    /// Opens x264 with `settings`; throws with x264's own message when it refuses them.
    package init(settings: VideoEncoderSettings) throws(EncoderError) {
        try X264Encoder.validate(settings)
        self.settings = settings

        let param = UnsafeMutablePointer<x264_param_t>.allocate(capacity: 1)
        let logSink = UnsafeMutablePointer<bk_x264_log_buffer>.allocate(capacity: 1)
        var opened: OpaquePointer?
        var succeeded = false
        defer {
            if !succeeded {
                if let opened { x264_encoder_close(opened) }
                param.deallocate()
                logSink.deallocate()
            }
        }

        let tune: String? = settings.tune.isEmpty ? nil : settings.tune
        guard x264_param_default_preset(param, settings.preset, tune) >= 0 else {
            throw .invalidSettings("unknown x264 preset '\(settings.preset)' or tune '\(settings.tune)'")
        }
        X264Encoder.configure(param, settings)
        X264Encoder.apply(settings.tuning, to: param)
        bk_x264_param_set_log(param, X264_LOG_ERROR, logSink)
        guard x264_param_apply_profile(param, settings.profile) >= 0 else {
            throw .invalidSettings("x264 profile '\(settings.profile)' cannot be applied")
        }

        guard let h = bk_x264_encoder_open(param) else {
            throw .libraryFailure("x264_encoder_open failed: \(X264Encoder.message(logSink))")
        }
        opened = h
        record = try X264Encoder.buildRecord(h)
        succeeded = true
        handle = h
        self.param = param
        self.logSink = logSink
        pictureIn = .allocate(capacity: 1)
        pictureOut = .allocate(capacity: 1)
        appliedBitrate = Atomic(settings.bitrateKbps)

        x264_picture_init(pictureIn)
        pictureIn.pointee.img.i_csp = X264_CSP_I420
        pictureIn.pointee.img.i_plane = 3
        x264_picture_init(pictureOut)
    }

    deinit {
        x264_encoder_close(handle)
        record.deallocate()
        param.deallocate()
        pictureIn.deallocate()
        pictureOut.deallocate()
        logSink.deallocate()
    }

    package func encode(_ picture: I420Frame, timestampMs: Int64, forceKeyframe: Bool,
                       emit: (EncodedPacket) -> Void) -> Bool {
        guard picture.width == settings.width, picture.height == settings.height else { return false }
        applyPendingBitrate()
        // The planes point straight at the caller's pooled frame; x264 copies into its own
        // frame buffers inside x264_encoder_encode, so nothing is retained past this call.
        let pic = pictureIn
        pic.pointee.img.plane.0 = picture.y
        pic.pointee.img.plane.1 = picture.u
        pic.pointee.img.plane.2 = picture.v
        pic.pointee.img.i_stride.0 = Int32(picture.strideY)
        pic.pointee.img.i_stride.1 = Int32(picture.strideUV)
        pic.pointee.img.i_stride.2 = Int32(picture.strideUV)
        pic.pointee.i_pts = timestampMs
        pic.pointee.i_type = forceKeyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        return encodeOne(pic, emit: emit)
    }

    package func flush(emit: (EncodedPacket) -> Void) {
        while x264_encoder_delayed_frames(handle) > 0 {
            if !encodeOne(nil, emit: emit) { return }
        }
    }

    package func requestBitrate(kbps: Int) {
        pendingBitrate.store(max(1, kbps), ordering: .releasing)
    }

    /// The analysis tools x264 actually runs with, read back from the open encoder (after
    /// preset, tuning and profile): for tests and diagnostics.
    var effectiveTools: X264Tuning {
        let p = UnsafeMutablePointer<x264_param_t>.allocate(capacity: 1)
        defer { p.deallocate() }
        x264_encoder_parameters(handle, p)
        let a = p.pointee.analyse
        let intra = X264_ANALYSE_I4x4 | X264_ANALYSE_I8x8
        return X264Tuning(subpelRefinement: Int(a.i_subpel_refine),
                          motionSearch: [X264Tuning.MotionSearch.diamond, .hexagon, .unevenMultiHexagon]
                              .first { $0.x264Value == a.i_me_method },
                          weightedPrediction: Int(a.i_weighted_pred), cabac: p.pointee.b_cabac != 0,
                          deblock: p.pointee.b_deblocking_filter != 0, transform8x8: a.b_transform_8x8 != 0,
                          intraPartitions: a.intra & intra == intra && a.inter & intra == intra,
                          adaptiveQuantization: Int(p.pointee.rc.i_aq_mode), trellis: Int(a.i_trellis))
    }

    /// Runs one x264_encoder_encode and emits the frame it returns, if any.
    private func encodeOne(_ input: UnsafeMutablePointer<x264_picture_t>?,
                           emit: (EncodedPacket) -> Void) -> Bool {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var nalCount: Int32 = 0
        let size = x264_encoder_encode(handle, &nals, &nalCount, input, pictureOut)
        guard size >= 0 else { return false }
        guard size > 0, let nals, nalCount > 0 else { return true }
        // x264 guarantees the payloads of one frame's NALs are contiguous, so the frame is one span.
        let out = pictureOut.pointee
        let data = UnsafeRawBufferPointer(start: nals[0].p_payload, count: Int(size))
        emit(EncodedPacket(codec: .h264, data: data, timestampMs: out.i_dts,
                           compositionOffsetMs: Int32(clamping: out.i_pts - out.i_dts),
                           isKeyframe: out.b_keyframe != 0))
        return true
    }

    /// Applies a bitrate asked for by another thread, scaling the VBV cap and buffer alike.
    private func applyPendingBitrate() {
        let kbps = pendingBitrate.exchange(0, ordering: .acquiring)
        guard kbps > 0, kbps != appliedBitrate.load(ordering: .relaxed) else { return }
        x264_encoder_parameters(handle, param)
        let base = settings.bitrateKbps
        param.pointee.rc.i_bitrate = Int32(kbps)
        param.pointee.rc.i_vbv_max_bitrate = Int32(max(1, settings.maxBitrateKbps * kbps / base))
        param.pointee.rc.i_vbv_buffer_size = Int32(max(1, settings.vbvBufferKbits * kbps / base))
        if x264_encoder_reconfig(handle, param) >= 0 {
            appliedBitrate.store(kbps, ordering: .relaxed)
        }
    }

    private static func validate(_ s: VideoEncoderSettings) throws(EncoderError) {
        guard s.width > 0, s.height > 0, s.width <= 8192, s.height <= 8192 else {
            throw .invalidSettings("video size \(s.width)x\(s.height) outside 1..8192")
        }
        // 4:2:0 chroma needs even dimensions; x264 rejects odd ones.
        guard s.width % 2 == 0, s.height % 2 == 0 else {
            throw .invalidSettings("video size \(s.width)x\(s.height) must be even for I420")
        }
        guard (1...240).contains(s.fps) else { throw .invalidSettings("fps \(s.fps) outside 1..240") }
        guard s.bitrateKbps > 0, s.maxBitrateKbps >= s.bitrateKbps, s.vbvBufferKbits > 0 else {
            throw .invalidSettings("bitrate \(s.bitrateKbps), max \(s.maxBitrateKbps), vbv \(s.vbvBufferKbits) kbps inconsistent")
        }
        guard (1...60).contains(s.keyframeIntervalSeconds) else {
            throw .invalidSettings("keyframe interval \(s.keyframeIntervalSeconds) s outside 1..60")
        }
        guard (1...16).contains(s.threads) else { throw .invalidSettings("threads \(s.threads) outside 1..16") }
        guard (1...16).contains(s.referenceFrames) else {
            throw .invalidSettings("reference frames \(s.referenceFrames) outside 1..16")
        }
        // Names are checked here because x264 reports bad ones on stderr, not to its log callback.
        guard bk_x264_preset_is_known(s.preset) != 0 else {
            throw .invalidSettings("unknown x264 preset '\(s.preset)'")
        }
        guard bk_x264_tune_is_known(s.tune) != 0 else { throw .invalidSettings("unknown x264 tune '\(s.tune)'") }
        guard ["baseline", "main", "high"].contains(s.profile) else {
            throw .invalidSettings("profile '\(s.profile)' is not baseline, main or high")
        }
        let t = s.tuning
        if let v = t.subpelRefinement, !(0...11).contains(v) { throw .invalidSettings("subme \(v) outside 0..11") }
        if let v = t.weightedPrediction, !(0...2).contains(v) { throw .invalidSettings("weightp \(v) outside 0..2") }
        if let v = t.adaptiveQuantization, !(0...3).contains(v) { throw .invalidSettings("aq-mode \(v) outside 0..3") }
        if let v = t.trellis, !(0...2).contains(v) { throw .invalidSettings("trellis \(v) outside 0..2") }
    }

    private static func configure(_ p: UnsafeMutablePointer<x264_param_t>, _ s: VideoEncoderSettings) {
        p.pointee.i_csp = X264_CSP_I420
        p.pointee.i_width = Int32(s.width)
        p.pointee.i_height = Int32(s.height)
        p.pointee.i_fps_num = UInt32(s.fps)
        p.pointee.i_fps_den = 1
        // Timestamps are session milliseconds; the rate control still follows fps (b_vfr_input = 0).
        p.pointee.i_timebase_num = 1
        p.pointee.i_timebase_den = 1000
        p.pointee.b_vfr_input = 0
        p.pointee.i_threads = Int32(s.threads)
        p.pointee.b_sliced_threads = s.slicedThreads ? 1 : 0
        p.pointee.i_sync_lookahead = 0
        p.pointee.i_frame_reference = Int32(s.referenceFrames)
        p.pointee.i_bframe = 0
        // A fixed GOP, as ingests expect: no scene-cut IDRs in between.
        let keyint = Int32(s.fps * s.keyframeIntervalSeconds)
        p.pointee.i_keyint_max = keyint
        p.pointee.i_keyint_min = keyint
        p.pointee.i_scenecut_threshold = 0
        p.pointee.rc.i_rc_method = X264_RC_ABR
        p.pointee.rc.i_bitrate = Int32(s.bitrateKbps)
        p.pointee.rc.i_vbv_max_bitrate = Int32(s.maxBitrateKbps)
        p.pointee.rc.i_vbv_buffer_size = Int32(s.vbvBufferKbits)
        p.pointee.rc.f_vbv_buffer_init = Float(s.vbvInitialFill)
        p.pointee.rc.i_lookahead = 0
        p.pointee.rc.b_mb_tree = 0
        // No weighted prediction unless a tuning asks for it (`VideoEncoderSettings.weightedPrediction`).
        // x264 allocates a weighted luma plane per thread at open but touches it only when it first
        // weights a reference (a fade, a flash): a VmHWM step long after start that no start-up
        // rehearsal can reach (720p veryfast: +760 kB of anon at t = 948 s of a soak, +880 kB one
        // second into a brightness fade). Presets turn it on only from veryfast up; it pays on fades.
        p.pointee.analyse.i_weighted_pred = Int32(X264_WEIGHTP_NONE)
        // AVCC framing; SPS/PPS travel once in the sequence header, not before each IDR.
        p.pointee.b_annexb = 0
        p.pointee.b_repeat_headers = 0
        p.pointee.b_aud = 0
        // Say in the VUI what FrameConverter computes (libyuv: BT.601 coefficients, limited
        // range), so a decoder does not guess BT.709 for HD sizes and shift the colours.
        // Primaries and transfer are sRGB's (desktop content): BT.709 primaries, IEC 61966-2-1.
        p.pointee.vui.i_colmatrix = 6       // smpte170m (BT.601)
        p.pointee.vui.b_fullrange = 0       // Y 16..235, Cb/Cr 16..240
        p.pointee.vui.i_colorprim = 1       // bt709
        p.pointee.vui.i_transfer = 13       // iec61966-2-1 (sRGB)
        p.pointee.vui.i_chroma_loc = 1      // centre: libyuv averages each 2x2 block
    }

    /// Sets the tools `t` names on top of the preset; the profile, applied afterwards, may still
    /// turn off what it does not allow (CABAC and 8x8 in baseline, 8x8 in main).
    private static func apply(_ t: X264Tuning, to p: UnsafeMutablePointer<x264_param_t>) {
        if let v = t.subpelRefinement { p.pointee.analyse.i_subpel_refine = Int32(v) }
        if let v = t.motionSearch { p.pointee.analyse.i_me_method = v.x264Value }
        if let v = t.weightedPrediction { p.pointee.analyse.i_weighted_pred = Int32(v) }
        if let v = t.cabac { p.pointee.b_cabac = v ? 1 : 0 }
        if let v = t.deblock {
            p.pointee.b_deblocking_filter = v ? 1 : 0
            p.pointee.i_deblocking_filter_alphac0 = 0
            p.pointee.i_deblocking_filter_beta = 0
        }
        if let v = t.transform8x8 { p.pointee.analyse.b_transform_8x8 = v ? 1 : 0 }
        if let v = t.intraPartitions {
            let intra = X264_ANALYSE_I4x4 | X264_ANALYSE_I8x8
            p.pointee.analyse.intra = v ? p.pointee.analyse.intra | intra : p.pointee.analyse.intra & ~intra
            p.pointee.analyse.inter = v ? p.pointee.analyse.inter | intra : p.pointee.analyse.inter & ~intra
        }
        if let v = t.trellis { p.pointee.analyse.i_trellis = Int32(v) }
        if let v = t.adaptiveQuantization {
            p.pointee.rc.i_aq_mode = Int32(v)
            // ultrafast leaves the strength at 0 with AQ off; AQ on needs x264's default 1.0.
            if v > 0 && p.pointee.rc.f_aq_strength <= 0 { p.pointee.rc.f_aq_strength = 1.0 }
        }
    }

    /// Reads SPS/PPS from x264_encoder_headers and builds the avcC record in owned memory.
    private static func buildRecord(_ h: OpaquePointer) throws(EncoderError) -> UnsafeMutableRawBufferPointer {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        guard x264_encoder_headers(h, &nals, &count) > 0, let nals else {
            throw .libraryFailure("x264_encoder_headers returned no headers")
        }
        var sps = UnsafeRawBufferPointer(start: nil, count: 0)
        var pps = UnsafeRawBufferPointer(start: nil, count: 0)
        for i in 0..<Int(count) {
            let nal = nals[i]
            // Each payload starts with the 4-byte AVCC length that b_annexb = 0 asks for.
            let body = UnsafeRawBufferPointer(start: nal.p_payload.advanced(by: 4), count: Int(nal.i_payload) - 4)
            if nal.i_type == Int32(NAL_SPS.rawValue) { sps = body }
            if nal.i_type == Int32(NAL_PPS.rawValue) { pps = body }
        }
        let size = AVCDecoderConfigurationRecord.byteCount(sps: sps, pps: pps)
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 1)
        do {
            let written = try AVCDecoderConfigurationRecord.write(sps: sps, pps: pps, into: out)
            return UnsafeMutableRawBufferPointer(rebasing: out[0..<written])
        } catch {
            out.deallocate()
            throw error
        }
    }

    private static func message(_ sink: UnsafeMutablePointer<bk_x264_log_buffer>) -> String {
        let text = withUnsafeBytes(of: &sink.pointee.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let trimmed = text.hasSuffix("\n") ? String(text.dropLast()) : text
        return trimmed.isEmpty ? "no message from x264" : trimmed
    }
}

extension X264Tuning.MotionSearch {
    var x264Value: Int32 {
        switch self {
        case .diamond: return X264_ME_DIA
        case .hexagon: return X264_ME_HEX
        case .unevenMultiHexagon: return X264_ME_UMH
        }
    }
}
