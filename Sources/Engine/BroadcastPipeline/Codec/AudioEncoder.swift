import BroadcastCore

/// An audio encoder consuming fixed-size frames of 48 kHz interleaved stereo Float32.
package protocol AudioEncoder: AnyObject {
    var settings: AudioEncoderSettings { get }
    /// Samples per channel in every input frame (1024 for AAC, 960 for Opus at 20 ms).
    var frameSize: Int { get }
    /// AudioSpecificConfig for AAC, OpusHead (RFC 7845 §5.1) for Opus.
    var sequenceHeader: UnsafeRawBufferPointer { get }
    /// Samples by which decoded output lags the input (priming); the session shifts timestamps by it.
    var delaySamples: Int { get }
    /// Encodes exactly `frameSize` frames; `emit` receives packets valid only during the call.
    func encode(_ samples: UnsafePointer<Float>, timestampMs: Int64, emit: (EncodedPacket) -> Void) -> Bool
}
