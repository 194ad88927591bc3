import BroadcastCore
import BroadcastPipeline

/// What an MP4 file's `moov` describes: an H.264 track and/or an AAC or Opus track, with their
/// codec configuration copied from the encoders (avcC, AudioSpecificConfig or OpusHead).
///
/// Track 1 is video when there is video; audio follows. Video uses a 90 kHz timescale, audio
/// its sample rate, the movie 1 kHz (the pipeline's milliseconds, presentation time).
/// An AAC packet's decoded output lags its input by the encoder delay, so the AAC track's media
/// time runs `primingSamples` ahead of presentation time and its edit list (`elst` media_time)
/// maps presentation time 0 to media time `primingSamples`: a decoder that honours the edit
/// plays each decoded sample at the time its input was captured.
package struct MP4TrackLayout: Sendable {
    package struct Video: Sendable {
        var width: Int
        var height: Int
        var fps: Int
        /// AVCDecoderConfigurationRecord.
        package var avcC: [UInt8]

        package init(width: Int, height: Int, fps: Int, avcC: [UInt8]) {
            self.width = width
            self.height = height
            self.fps = fps
            self.avcC = avcC
        }
    }

    package struct Audio: Sendable {
        package var codec: AudioCodec
        var sampleRate: Int
        var channels: Int
        var bitrateKbps: Int
        /// Samples per packet (1024 AAC, 960 Opus).
        var frameSize: Int
        /// AudioSpecificConfig (AAC) or OpusHead (Opus).
        package var config: [UInt8]
        /// AAC priming in samples of `sampleRate`: the media time the audio edit list starts at.
        /// 0 for Opus, whose pre-skip travels in `dOps` (decoders drop it themselves).
        package var primingSamples: Int = 0

        package init(codec: AudioCodec, sampleRate: Int, channels: Int, bitrateKbps: Int, frameSize: Int,
                     config: [UInt8], primingSamples: Int = 0) {
            self.codec = codec
            self.sampleRate = sampleRate
            self.channels = channels
            self.bitrateKbps = bitrateKbps
            self.frameSize = frameSize
            self.config = config
            self.primingSamples = primingSamples
        }

        /// The priming of an encoder whose delay is `encoderDelaySamples` at the 48 kHz timeline.
        package static func priming(codec: AudioCodec, encoderDelaySamples: Int, sampleRate: Int) -> Int {
            codec == .aac ? encoderDelaySamples * sampleRate / Int(AudioClock.rate) : 0
        }
    }

    package var video: Video?
    package var audio: Audio?

    package init(video: Video?, audio: Audio?) {
        self.video = video
        self.audio = audio
    }

    static let videoTimescale = 90_000
    static let movieTimescale = 1000

    var videoTrackID: UInt32 { 1 }
    var audioTrackID: UInt32 { video == nil ? 1 : 2 }
    var trackCount: Int { (video == nil ? 0 : 1) + (audio == nil ? 0 : 1) }
}
