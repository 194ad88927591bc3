import BroadcastCore

/// What a destination is, for the pipeline that feeds it: fixed for the sink's life, read once
/// when its `Destination` is built (`TagSink.capabilities`). Everything defaults to a plain
/// recording: ordered tracks, no priming, no reconnects, any pace.
public struct DestinationCapabilities: Sendable, Equatable {
    /// A network link: it reconnects after a lost connection, its queue applies the congestion
    /// policy's media-time thresholds, and its delivered rate drives the bitrate controller.
    public var isNetworkPublisher: Bool
    /// Where the destination takes packets: in interleaved order (the default), or each track's
    /// as soon as it is encoded, without the interleaver's wait for the other track (WHIP: RTP
    /// streams are timed per track).
    public var stage: PacketStage
    /// `stage == .encoded` (the name this property had before `stage`).
    public var tracksUnordered: Bool {
        get { stage == .encoded }
        set { stage = newValue ? .encoded : .interleaved }
    }
    /// Takes the AAC priming packets (`EncodedPacket.isPriming`; a `TagSink` sees `FLVTag.isPriming`),
    /// stamped before time 0, which a format with an edit list keeps so that the stream's first
    /// samples decode whole. FLV, RTMP, TS and RTP cannot carry a time before 0, and never see them.
    public var takesPriming: Bool
    /// Carries a real-time stream only (live SRT, WHIP). In block mode, where the producer is the
    /// clock and may run far ahead of real time, the destination paces its sends to media time.
    public var needsRealTimeInput: Bool

    public init(isNetworkPublisher: Bool = false, stage: PacketStage = .interleaved, takesPriming: Bool = false,
                needsRealTimeInput: Bool = false) {
        self.isNetworkPublisher = isNetworkPublisher
        self.stage = stage
        self.takesPriming = takesPriming
        self.needsRealTimeInput = needsRealTimeInput
    }

    /// The same, with the stage given as `tracksUnordered` (true: `.encoded`).
    public init(isNetworkPublisher: Bool = false, tracksUnordered: Bool, takesPriming: Bool = false,
                needsRealTimeInput: Bool = false) {
        self.init(isNetworkPublisher: isNetworkPublisher, stage: tracksUnordered ? .encoded : .interleaved,
                  takesPriming: takesPriming, needsRealTimeInput: needsRealTimeInput)
    }

    /// A recording or a custom sink: the defaults.
    public static let recording = DestinationCapabilities()
}

/// Where in the pipeline a destination takes the encoded packets.
public enum PacketStage: Sendable, Equatable {
    /// Both tracks merged in timestamp order by the interleaver: what a container or a single
    /// multiplexed connection needs (RTMP, SRT's TS, FLV, MP4).
    case interleaved
    /// Each track's packets as soon as they are encoded, in that track's own order (no wait for
    /// the other track): for a transport that times each track on its own (WHIP's RTP streams).
    case encoded
}
