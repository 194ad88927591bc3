import BroadcastCore
import BroadcastPipeline

/// The stream description sent once as the RTMP `@setDataFrame` / `onMetaData` script tag.
///
/// Built at start (not on the hot path). A video-only stream sets `hasAudio = false` and the
/// audio fields are omitted; an audio-only stream likewise omits the video fields.
package struct StreamMetadata: Sendable, Equatable {
    var hasVideo: Bool
    var hasAudio: Bool
    var width: Int
    var height: Int
    var framerate: Double
    var videoDataRateKbps: Int
    /// FLV CodecID; 7 = AVC.
    var videoCodecID: Int
    var audioCodec: AudioCodec
    var audioDataRateKbps: Int
    var audioSampleRate: Int
    var audioChannels: Int
    var encoder: String

    package init(hasVideo: Bool = true, hasAudio: Bool = true,
                width: Int, height: Int, framerate: Double, videoDataRateKbps: Int,
                videoCodecID: Int = 7,
                audioCodec: AudioCodec = .aac, audioDataRateKbps: Int = 128,
                audioSampleRate: Int = 48_000, audioChannels: Int = 2,
                encoder: String = "BroadcastKit") {
        self.hasVideo = hasVideo
        self.hasAudio = hasAudio
        self.width = width
        self.height = height
        self.framerate = framerate
        self.videoDataRateKbps = videoDataRateKbps
        self.videoCodecID = videoCodecID
        self.audioCodec = audioCodec
        self.audioDataRateKbps = audioDataRateKbps
        self.audioSampleRate = audioSampleRate
        self.audioChannels = audioChannels
        self.encoder = encoder
    }

    /// `audiocodecid`: 10 for AAC; for Opus the FourCC 'Opus' as a number, as E-RTMP does.
    var audioCodecIDValue: Double {
        switch audioCodec {
        case .aac: return 10
        case .opus: return Double(FLVTagBody.opusFourCC)
        }
    }

    /// The RTMP data-message prefix; FLV files carry `onMetaData` without it.
    static let setDataFrame = "@setDataFrame"

    private static let videoNumberKeys = ["width", "height", "framerate", "videocodecid", "videodatarate"]
    private static let audioNumberKeys = ["audiocodecid", "audiodatarate", "audiosamplerate",
                                          "audiosamplesize", "audiochannels"]

    /// Exact size of the body `write(into:)` produces.
    var encodedSize: Int {
        var size = AMF0Writer.stringSize(Self.setDataFrame) + AMF0Writer.stringSize("onMetaData")
            + AMF0Writer.ecmaArrayStartSize + AMF0Writer.objectEndSize
        if hasVideo {
            for key in Self.videoNumberKeys { size += AMF0Writer.keySize(key) + AMF0Writer.numberSize }
        }
        if hasAudio {
            for key in Self.audioNumberKeys { size += AMF0Writer.keySize(key) + AMF0Writer.numberSize }
            size += AMF0Writer.keySize("stereo") + AMF0Writer.booleanSize
        }
        size += AMF0Writer.keySize("encoder") + AMF0Writer.stringSize(encoder)
        return size
    }

    /// Number of ECMA array entries.
    var propertyCount: UInt32 {
        UInt32((hasVideo ? Self.videoNumberKeys.count : 0)
            + (hasAudio ? Self.audioNumberKeys.count + 1 : 0) + 1)
    }

    /// Writes the script-data body: "@setDataFrame", "onMetaData", ECMA array.
    /// Returns bytes written, or `nil` if `destination` is smaller than `encodedSize`.
    package func write(into destination: UnsafeMutableRawBufferPointer) -> Int? {
        var w = AMF0Writer(buffer: destination)
        w.writeString(Self.setDataFrame)
        w.writeString("onMetaData")
        w.writeECMAArrayStart(count: propertyCount)
        if hasVideo {
            w.writePropertyKey("width"); w.writeNumber(Double(width))
            w.writePropertyKey("height"); w.writeNumber(Double(height))
            w.writePropertyKey("framerate"); w.writeNumber(framerate)
            w.writePropertyKey("videocodecid"); w.writeNumber(Double(videoCodecID))
            w.writePropertyKey("videodatarate"); w.writeNumber(Double(videoDataRateKbps))
        }
        if hasAudio {
            w.writePropertyKey("audiocodecid"); w.writeNumber(audioCodecIDValue)
            w.writePropertyKey("audiodatarate"); w.writeNumber(Double(audioDataRateKbps))
            w.writePropertyKey("audiosamplerate"); w.writeNumber(Double(audioSampleRate))
            w.writePropertyKey("audiosamplesize"); w.writeNumber(16)
            w.writePropertyKey("stereo"); w.writeBoolean(audioChannels >= 2)
            w.writePropertyKey("audiochannels"); w.writeNumber(Double(audioChannels))
        }
        w.writePropertyKey("encoder"); w.writeString(encoder)
        w.writeObjectEnd()
        return w.overflowed ? nil : w.offset
    }
}
