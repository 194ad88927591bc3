import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// The program a transport stream carries: which elementary streams, on which PIDs, with which
/// stream types. One program (number 1); PCR on the video PID, or on audio when there is no video.
struct TSStreamLayout: Sendable, Equatable {
    static let pmtPID: UInt16 = 0x1000
    static let videoPID: UInt16 = 0x100
    static let audioPID: UInt16 = 0x101

    var hasVideo: Bool
    /// nil: no audio track.
    var audioCodec: AudioCodec?
    /// Opus channel count, for its extension descriptor.
    var audioChannels: Int

    init(hasVideo: Bool, audioCodec: AudioCodec?, audioChannels: Int = 2) {
        self.hasVideo = hasVideo
        self.audioCodec = audioCodec
        self.audioChannels = audioChannels
    }

    var pcrPID: UInt16 { hasVideo ? Self.videoPID : Self.audioPID }

    /// H.264 (0x1B); AAC in ADTS (0x0F); Opus as private PES data (0x06) identified by its
    /// registration descriptor.
    static let h264StreamType: UInt8 = 0x1B
    static let adtsStreamType: UInt8 = 0x0F
    static let privateStreamType: UInt8 = 0x06

    /// PES stream ids: video, MPEG audio (AAC), private_stream_1 (Opus).
    static let videoStreamID: UInt8 = 0xE0
    static let audioStreamID: UInt8 = 0xC0
    static let privateStreamID: UInt8 = 0xBD

    var audioStreamID: UInt8 { audioCodec == .opus ? Self.privateStreamID : Self.audioStreamID }
}
