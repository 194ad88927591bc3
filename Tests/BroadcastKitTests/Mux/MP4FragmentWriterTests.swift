#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastKit

/// The MP4 writer's boxes, checked by layout (sizes add up, fragments in order). Decoding is
/// checked by PyAV and ffprobe in the integration tests, never by a parser of ours.
@Suite struct MP4FragmentWriterTests {
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
}
