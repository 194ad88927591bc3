import BroadcastCore

/// What a destination is, for the pipeline that feeds it: fixed for the sink's life, read once
/// when its `Destination` is built (`TagSink.capabilities`). Everything defaults to a plain
/// recording: ordered tracks, no priming, no reconnects, any pace.
public struct DestinationCapabilities: Sendable, Equatable {
    /// A network link: it reconnects after a lost connection, its queue applies the congestion
    /// policy's media-time thresholds, and its delivered rate drives the bitrate controller.
    public var isNetworkPublisher: Bool
    /// Takes each track's tags as soon as they are encoded, without the interleaver's wait for the
    /// other track (WHIP: RTP streams are timed per track).
    public var tracksUnordered: Bool
    /// Takes the AAC priming packets (`FLVTag.isPriming`), stamped before time 0, which a format
    /// with an edit list keeps so that the stream's first samples decode whole. FLV, RTMP, TS and
    /// RTP cannot carry a time before 0, and never see them.
    public var takesPriming: Bool
    /// Carries a real-time stream only (live SRT, WHIP). In block mode, where the producer is the
    /// clock and may run far ahead of real time, the destination paces its sends to media time.
    public var needsRealTimeInput: Bool

    public init(isNetworkPublisher: Bool = false, tracksUnordered: Bool = false, takesPriming: Bool = false,
                needsRealTimeInput: Bool = false) {
        self.isNetworkPublisher = isNetworkPublisher
        self.tracksUnordered = tracksUnordered
        self.takesPriming = takesPriming
        self.needsRealTimeInput = needsRealTimeInput
    }

    /// A recording or a custom sink: the defaults.
    public static let recording = DestinationCapabilities()
}
