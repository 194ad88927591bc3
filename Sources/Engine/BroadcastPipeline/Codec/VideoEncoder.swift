import BroadcastCore

/// An H.264 encoder fed one output-sized I420 picture at a time.
///
/// Implementations are used from one lane thread at a time, except `requestBitrate`,
/// which may be called from the sender thread.
package protocol VideoEncoder: AnyObject {
    var settings: VideoEncoderSettings { get }
    /// The AVCDecoderConfigurationRecord (ISO 14496-15 §5.2.4.1) built from SPS/PPS at open.
    var decoderConfigurationRecord: UnsafeRawBufferPointer { get }
    /// Encodes one picture; calls `emit` zero or more times with packets valid only during the call.
    /// Returns false when the encoder failed on this picture.
    func encode(_ picture: I420Frame, timestampMs: Int64, forceKeyframe: Bool,
                emit: (EncodedPacket) -> Void) -> Bool
    /// Drains delayed frames at the end of the stream.
    func flush(emit: (EncodedPacket) -> Void)
    /// Asks for a new average/max bitrate; applied before the next picture (x264_encoder_reconfig).
    func requestBitrate(kbps: Int)
}
