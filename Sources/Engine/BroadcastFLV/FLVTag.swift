import BroadcastCore
import BroadcastPipeline

/// FLV tag types (FLV 10.1 §E.4.1).
public enum FLVTagType: UInt8, Sendable, BitwiseCopyable {
    case audio = 8
    case video = 9
    case scriptData = 18
}

/// One FLV tag body with its type and timestamp, borrowed for the duration of a write.
///
/// The body is exactly what an RTMP message carries; file sinks add the 11-byte tag header
/// and the 4-byte PreviousTagSize themselves.
public struct FLVTag: @unchecked Sendable {
    public var type: FLVTagType
    public var timestampMs: UInt32
    public var body: UnsafeRawBufferPointer
    public var isKeyframe: Bool
    /// Sequence headers and metadata: resent on reconnect, never dropped.
    public var isHeader: Bool
    /// CLOCK_MONOTONIC time the source buffer reached `process()` (0 if unknown): the start of
    /// the capture-to-socket latency measured when the tag's last byte is written.
    public var captureNs: Int64
    /// An AAC packet the encoder emitted before the stream's time 0: it decodes to the encoder's
    /// priming and carries the overlap the first real samples need. Only sinks that keep an edit
    /// list take it (`DestinationCapabilities.takesPriming`, the MP4 recorder); `timestampMs` is 0.
    public var isPriming: Bool

    public init(type: FLVTagType, timestampMs: UInt32, body: UnsafeRawBufferPointer,
                isKeyframe: Bool = false, isHeader: Bool = false, captureNs: Int64 = 0, isPriming: Bool = false) {
        self.captureNs = captureNs
        self.isPriming = isPriming
        self.type = type
        self.timestampMs = timestampMs
        self.body = body
        self.isKeyframe = isKeyframe
        self.isHeader = isHeader
    }
}
