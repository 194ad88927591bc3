import Testing
@testable import BroadcastFLV
import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct StreamMetadataTests {
    @Test func opusAudioOnlyMetadataBytes() {
        let meta = StreamMetadata(hasVideo: false, hasAudio: true, width: 0, height: 0, framerate: 0,
                                  videoDataRateKbps: 0, audioCodec: .opus, audioDataRateKbps: 128,
                                  audioSampleRate: 48_000, audioChannels: 2, encoder: "t")
        let bytes = captureBytes(capacity: 512) { meta.write(into: $0) }
        var expected = hex("02 00 0D") + ascii("@setDataFrame")
        expected += hex("02 00 0A") + ascii("onMetaData")
        expected += hex("08 00 00 00 07")
        // 'Opus' = 0x4F707573 = 1332770163 = 2^30 * 1.0011110111000001110101011100112
        expected += hex("00 0C") + ascii("audiocodecid") + hex("00 41 D3 DC 1D 5C C0 00 00")
        expected += hex("00 0D") + ascii("audiodatarate") + hex("00 40 60 00 00 00 00 00 00")
        expected += hex("00 0F") + ascii("audiosamplerate") + hex("00 40 E7 70 00 00 00 00 00")
        expected += hex("00 0F") + ascii("audiosamplesize") + hex("00 40 30 00 00 00 00 00 00")
        expected += hex("00 06") + ascii("stereo") + hex("01 01")
        expected += hex("00 0D") + ascii("audiochannels") + hex("00 40 00 00 00 00 00 00 00")
        expected += hex("00 07") + ascii("encoder") + hex("02 00 01") + ascii("t")
        expected += hex("00 00 09")
        #expect(bytes == expected)
        #expect(meta.encodedSize == expected.count)
    }

    @Test func videoOnlyOmitsAudioFields() {
        let meta = StreamMetadata(hasVideo: true, hasAudio: false, width: 1280, height: 720,
                                  framerate: 30, videoDataRateKbps: 2500)
        let bytes = captureBytes(capacity: 512) { meta.write(into: $0) } ?? []
        #expect(bytes.count == meta.encodedSize)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("videocodecid"))
        #expect(!text.contains("audio"))
        #expect(!text.contains("stereo"))
        // ECMA count: 5 video numbers + encoder.
        let arrayAt = 16 + 13
        #expect(Array(bytes[arrayAt..<arrayAt + 5]) == hex("08 00 00 00 06"))
        // width = 1280 = 0x4094000000000000
        let widthKey = hex("00 05") + ascii("width") + hex("00 40 94 00 00 00 00 00 00")
        #expect(Array(bytes[(arrayAt + 5)..<(arrayAt + 5 + widthKey.count)]) == widthKey)
    }

    @Test func aacCodecIDAndTooSmallBuffer() {
        let meta = StreamMetadata(width: 640, height: 360, framerate: 30, videoDataRateKbps: 800)
        #expect(meta.audioCodecIDValue == 10)
        #expect(captureBytes(capacity: meta.encodedSize - 1) { meta.write(into: $0) } == nil)
        #expect(captureBytes(capacity: meta.encodedSize) { meta.write(into: $0) }?.count == meta.encodedSize)
    }
}
