#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastRecording
import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

/// The MP4 writer's boxes, checked by layout (sizes add up, fragments in order). Decoding is
/// checked by PyAV and ffprobe in the integration tests, never by a parser of ours.
@Suite(.timeLimit(.minutes(2))) struct MP4FragmentWriterTests {
    static let layout = MP4TrackLayout(
        video: .init(width: 64, height: 48, fps: 30, avcC: [1, 0x64, 0, 0x1F, 0xFF, 0xE0, 0]),
        audio: .init(codec: .aac, sampleRate: 48000, channels: 2, bitrateKbps: 128, frameSize: 1024, config: [0x11, 0x90]))

    /// Walks top-level boxes: (type, size) in file order.
    static func topLevel(_ bytes: [UInt8]) -> [(String, Int)] {
        var out: [(String, Int)] = []
        var i = 0
        while i + 8 <= bytes.count {
            let size = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            out.append((String(decoding: bytes[i + 4..<i + 8], as: UTF8.self), size))
            guard size >= 8 else { break }
            i += size
        }
        return out
    }

    static func readAll(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    @Test func initSegmentThenFragmentsTileTheFile() throws {
        let path = "/tmp/bk-mp4-test-\(getpid()).mp4"
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0)
        let w = MP4FragmentWriter(layout: Self.layout, maxSamples: 16)
        #expect(w.writeInit(fd: fd, durationMs: 0))
        let payload: [UInt8] = Array(repeating: 0xAB, count: 100)
        try payload.withUnsafeBytes { p in
            var samples: [MP4Sample] = []
            for i in 0..<3 {
                samples.append(MP4Sample(isVideo: true, isKeyframe: i == 0, timestampMs: Int64(i * 33),
                                         compositionOffsetMs: 0, data: p.baseAddress!, size: 50))
                samples.append(MP4Sample(isVideo: false, isKeyframe: false, timestampMs: Int64(i * 21),
                                         compositionOffsetMs: 0, data: p.baseAddress!, size: 10))
            }
            let ok = samples.withUnsafeBufferPointer { w.writeFragment(fd: fd, samples: $0, originMs: 0, nextVideoMs: 99) }
            try #require(ok, "errno \(errno)")
            let ok2 = samples.withUnsafeBufferPointer { w.writeFragment(fd: fd, samples: $0, originMs: 0, nextVideoMs: nil) }
            #expect(ok2)
        }
        w.patchDuration(fd: fd)
        close(fd)
        let bytes = Self.readAll(path)
        let boxes = Self.topLevel(bytes)
        #expect(boxes.map(\.0) == ["ftyp", "moov", "moof", "mdat", "moof", "mdat"])
        #expect(boxes.reduce(0) { $0 + $1.1 } == bytes.count)
        #expect(boxes[3].1 == 8 + 3 * 50 + 3 * 10)
        #expect(w.bytesWritten == bytes.count)
    }

    /// Child boxes of the box whose payload is `range`: (type, payload range).
    static func children(_ b: [UInt8], _ range: Range<Int>) -> [(String, Range<Int>)] {
        var out: [(String, Range<Int>)] = []
        var i = range.lowerBound
        while i + 8 <= range.upperBound {
            let size = Int(be32(b, i))
            guard size >= 8, i + size <= range.upperBound else { break }
            out.append((String(decoding: b[i + 4..<i + 8], as: UTF8.self), i + 8..<i + size))
            i += size
        }
        return out
    }

    static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    static func be64(_ b: [UInt8], _ i: Int) -> UInt64 { UInt64(be32(b, i)) << 32 | UInt64(be32(b, i + 4)) }

    /// The payload of the box along `path` (each step one child type, the `nth` of the last step),
    /// searched from `range`.
    static func find(_ b: [UInt8], _ path: [String], in range: Range<Int>, nth: Int = 0) -> Range<Int>? {
        guard let first = path.first else { return range }
        let matches = children(b, range).filter { $0.0 == first }
        let index = path.count == 1 ? nth : 0
        guard matches.count > index else { return nil }
        return find(b, Array(path.dropFirst()), in: matches[index].1, nth: nth)
    }

    /// Writes the init segment and one fragment (two video frames, two audio packets from 21 ms).
    static func writeFile(_ layout: MP4TrackLayout) throws -> [UInt8] {
        let path = "/tmp/bk-mp4-edit-\(getpid())-\(layout.audio?.codec == .opus ? "opus" : "aac").mp4"
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        let w = MP4FragmentWriter(layout: layout, maxSamples: 16)
        try #require(w.writeInit(fd: fd, durationMs: 0))
        let payload: [UInt8] = Array(repeating: 0xAB, count: 64)
        let ok = payload.withUnsafeBytes { p in
            let samples = [
                MP4Sample(isVideo: true, isKeyframe: true, timestampMs: 0, compositionOffsetMs: 0, data: p.baseAddress!, size: 40),
                MP4Sample(isVideo: false, isKeyframe: false, timestampMs: 21, compositionOffsetMs: 0, data: p.baseAddress!, size: 10),
                MP4Sample(isVideo: true, isKeyframe: false, timestampMs: 33, compositionOffsetMs: 0, data: p.baseAddress!, size: 40),
                MP4Sample(isVideo: false, isKeyframe: false, timestampMs: 42, compositionOffsetMs: 0, data: p.baseAddress!, size: 10),
            ]
            return samples.withUnsafeBufferPointer { w.writeFragment(fd: fd, samples: $0, originMs: 0, nextVideoMs: nil) }
        }
        try #require(ok)
        w.patchDuration(fd: fd)
        close(fd)
        return readAll(path)
    }

    /// AAC priming comes from the encoder (its measured delay), becomes the audio track's edit list
    /// (one edit from media time = priming, duration patched at the end), and the audio media time
    /// runs that far ahead of the FLV timestamps; the video track has no edit.
    @Test func aacPrimingIsTheAudioEditList() throws {
        let encoder = try AACEncoder(settings: AudioEncoderSettings(codec: .aac, bitrateKbps: 128))
        let priming = MP4TrackLayout.Audio.priming(codec: .aac, encoderDelaySamples: encoder.delaySamples, sampleRate: 48000)
        #expect(priming == encoder.delaySamples)
        #expect(priming > 0)
        var layout = Self.layout
        layout.audio?.primingSamples = priming
        let b = try Self.writeFile(layout)
        let all = 0..<b.count
        let videoTrak = try #require(Self.find(b, ["moov", "trak"], in: all, nth: 0))
        let audioTrak = try #require(Self.find(b, ["moov", "trak"], in: all, nth: 1))
        #expect(Self.find(b, ["edts"], in: videoTrak) == nil)
        let elst = try #require(Self.find(b, ["edts", "elst"], in: audioTrak))
        // version/flags, entry_count, segment_duration, media_time, media_rate
        #expect(Self.be32(b, elst.lowerBound) == 0)
        #expect(Self.be32(b, elst.lowerBound + 4) == 1)
        #expect(Self.be32(b, elst.lowerBound + 8) == 66, "the edit lasts the file (end of the last frame, ms)")
        #expect(Self.be32(b, elst.lowerBound + 12) == UInt32(priming))
        #expect(Self.be32(b, elst.lowerBound + 16) == 0x0001_0000)
        // Track order inside trak: tkhd, edts, mdia.
        #expect(Self.children(b, audioTrak).map(\.0) == ["tkhd", "edts", "mdia"])
        let audioTraf = try #require(Self.find(b, ["moof", "traf"], in: all, nth: 1))
        let tfdt = try #require(Self.find(b, ["tfdt"], in: audioTraf))
        #expect(Self.be64(b, tfdt.lowerBound + 4) == UInt64(21 * 48 + priming))
        let videoTraf = try #require(Self.find(b, ["moof", "traf"], in: all, nth: 0))
        let vtfdt = try #require(Self.find(b, ["tfdt"], in: videoTraf))
        #expect(Self.be64(b, vtfdt.lowerBound + 4) == 0)
    }

    /// Opus: no edit list; the encoder's pre-skip (its lookahead) is in dOps, big-endian.
    @Test func opusPreSkipIsInDOpsWithoutAnEditList() throws {
        let encoder = try OpusEncoder(settings: AudioEncoderSettings(codec: .opus, bitrateKbps: 96))
        #expect(encoder.delaySamples > 0)
        #expect(MP4TrackLayout.Audio.priming(codec: .opus, encoderDelaySamples: encoder.delaySamples, sampleRate: 48000) == 0)
        let layout = MP4TrackLayout(
            video: Self.layout.video,
            audio: .init(codec: .opus, sampleRate: 48000, channels: 2, bitrateKbps: 96, frameSize: encoder.frameSize,
                         config: Array(encoder.sequenceHeader)))
        let b = try Self.writeFile(layout)
        let audioTrak = try #require(Self.find(b, ["moov", "trak"], in: 0..<b.count, nth: 1))
        #expect(Self.find(b, ["edts"], in: audioTrak) == nil)
        let stsd = try #require(Self.find(b, ["mdia", "minf", "stbl", "stsd"], in: audioTrak))
        let entries = Self.children(b, stsd.lowerBound + 8..<stsd.upperBound)   // after version/flags, count
        #expect(entries.first?.0 == "Opus")
        let entry = try #require(entries.first?.1)
        let dOps = try #require(Self.find(b, ["dOps"], in: entry.lowerBound + 28..<entry.upperBound))
        #expect(b[dOps.lowerBound] == 0)                                    // version
        #expect(Int(b[dOps.lowerBound + 1]) == 2)                           // channels
        #expect(Int(b[dOps.lowerBound + 2]) << 8 | Int(b[dOps.lowerBound + 3]) == encoder.delaySamples)
        #expect(Self.be32(b, dOps.lowerBound + 4) == 48000)                  // input sample rate
        let audioTraf = try #require(Self.find(b, ["moof", "traf"], in: 0..<b.count, nth: 1))
        let tfdt = try #require(Self.find(b, ["tfdt"], in: audioTraf))
        #expect(Self.be64(b, tfdt.lowerBound + 4) == UInt64(21 * 48))
    }
}
