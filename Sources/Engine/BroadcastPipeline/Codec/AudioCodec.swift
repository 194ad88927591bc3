import BroadcastCore

/// The audio track codec.
public enum AudioCodec: String, Sendable, CaseIterable {
    /// AAC-LC via libvo-aacenc; legacy FLV SoundFormat 10. Accepted by every RTMP ingest.
    case aac
    /// Opus via libopus; Enhanced RTMP v2 ExHeader audio with FourCC 'Opus'.
    case opus
}

/// Audio encoder parameters. Input is always 48 kHz interleaved stereo Float32 from the mixer.
public struct AudioEncoderSettings: Sendable, Equatable {
    public var codec: AudioCodec
    public var bitrateKbps: Int
    public var sampleRate: Int
    public var channels: Int

    public init(codec: AudioCodec = .aac, bitrateKbps: Int = 128, sampleRate: Int = 48_000, channels: Int = 2) {
        self.codec = codec
        self.bitrateKbps = bitrateKbps
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public static let `default` = AudioEncoderSettings()
}
