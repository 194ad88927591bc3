import BroadcastKit
@testable import BroadcastCapture
import Foundation
import Testing

/// Writes `bytes` to a fresh temporary file and returns its path.
func temporaryFile(_ bytes: [UInt8], name: String) throws -> String {
    let path = NSTemporaryDirectory() + "capture-\(getpid())-\(UInt32.random(in: 0...UInt32.max))-\(name)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}

/// A real YUV4MPEG2 stream from ffmpeg's testsrc2, cached per process.
private let ffmpegY4M: Result<[UInt8], Error> = Result {
    let out = NSTemporaryDirectory() + "capture-ffmpeg-\(getpid()).y4m"
    let ffmpeg = Process()
    ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    ffmpeg.arguments = ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
                        "-frames:v", "30", "-f", "yuv4mpegpipe", out]
    try ffmpeg.run()
    ffmpeg.waitUntilExit()
    defer { try? FileManager.default.removeItem(atPath: out) }
    return Array(try Data(contentsOf: URL(fileURLWithPath: out)))
}

/// Runs a Y4M source over `bytes` (not paced) and returns it with what the sink saw.
private func runY4M(_ bytes: [UInt8]) throws -> (Y4MSource, RecordingSink, Result<Void, CaptureError>) {
    let path = try temporaryFile(bytes, name: "in.y4m")
    defer { unlink(path) }
    let source = Y4MSource(path: path, realtime: false)
    let sink = RecordingSink()
    do {
        try source.start(into: sink)
    } catch {
        return (source, sink, .failure(error))
    }
    #expect(source.waitUntilFinished(timeoutNanoseconds: 10_000_000_000))
    source.stop()
    if let error = source.error { return (source, sink, .failure(error)) }
    return (source, sink, .success(()))
}

/// Header errors are `.badInput` (exit 2 before connecting); errors once frames flow are `.io`
/// (a failure of the run in progress, exit 4).
private func expectError(_ result: Result<Void, CaptureError>, contains text: String, kind: CaptureError.Kind = .badInput,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    guard case .failure(let error) = result else {
        Issue.record("expected an error containing '\(text)'", sourceLocation: sourceLocation)
        return
    }
    #expect(error.kind == kind, sourceLocation: sourceLocation)
    #expect(error.message.contains(text), "got: \(error.message)", sourceLocation: sourceLocation)
    #expect(!error.message.contains("\n"), sourceLocation: sourceLocation)
}

@Suite(.timeLimit(.minutes(2))) struct Y4MSourceTests {
    @Test func readsAllFramesOfARealFFmpegStream() throws {
        let bytes = try ffmpegY4M.get()
        let (source, sink, result) = try runY4M(bytes)
        #expect(throws: Never.self) { try result.get() }
        let frames = sink.lane(.video)
        #expect(frames.count == 30)
        #expect(source.framesDelivered == 30)
        #expect(source.header == Y4MHeader(width: 320, height: 240, frameRateNumerator: 25, frameRateDenominator: 1,
                                           colourSpace: source.header?.colourSpace ?? ""))
        #expect(source.header.map { ["420", "420jpeg", "420mpeg2", "420paldv"].contains($0.colourSpace) } == true)
        let t0 = try #require(frames.first).pts
        for (n, f) in frames.enumerated() {
            #expect(f.width == 320 && f.height == 240 && f.pixelFormat == .i420 && f.validation == nil)
            #expect(f.byteCount == 320 * 240 * 3 / 2)
            #expect(f.pts == t0 + Int64(n) * 40_000_000)
        }
        // The payload is delivered verbatim: compare the first Y bytes of frame 0 with the file.
        let firstFrame = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1 + "FRAME\n".utf8.count
        #expect(frames[0].firstBytes == Array(bytes[firstFrame..<(firstFrame + 16)]))
    }

    @Test func realtimeModePacesAtTheNominalRate() throws {
        let bytes = try ffmpegY4M.get()
        let headerEnd = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        let tenFrames = headerEnd + 10 * (320 * 240 * 3 / 2 + 6)  // 0.4 s at 25 fps
        let path = try temporaryFile(Array(bytes.prefix(tenFrames)), name: "rt.y4m")
        defer { unlink(path) }
        let source = Y4MSource(path: path)
        let sink = RecordingSink()
        let started = MediaTime.now()
        try source.start(into: sink)
        defer { source.stop() }  // joins the reader thread (TSan: thread leak otherwise)
        #expect(source.waitUntilFinished(timeoutNanoseconds: 5_000_000_000))
        let elapsed = MediaTime.now() - started
        #expect(source.error == nil)
        #expect(sink.lane(.video).count == 10)
        // Paced, by the configured rate: frame n is never delivered before t0 + n x 40 ms, so ten
        // frames take at least nine frame periods. A loaded machine can only make it slower; how
        // much slower is a benchmark, and the 5 s above turns a hang into a failure.
        let period: Int64 = 1_000_000_000 / 25
        #expect(elapsed >= 9 * period, "10 frames at 25 fps in \(elapsed) ns: faster than real time")
        let video = sink.lane(.video)
        for (n, f) in video.enumerated() {
            #expect(f.deliveredAt >= f.pts, "frame \(n) delivered before its time")
            #expect(f.pts == video[0].pts + Int64(n) * period)
        }
    }

    @Test func truncatedLastFrameIsAClearError() throws {
        let bytes = try ffmpegY4M.get()
        let (source, sink, result) = try runY4M(Array(bytes.dropLast(1000)))
        expectError(result, contains: "truncated frame 29", kind: .io)
        #expect(sink.lane(.video).count == 29)
        #expect(source.framesDelivered == 29)
    }

    @Test func badFrameMarkerMidStreamIsAClearError() throws {
        var bytes = try ffmpegY4M.get()
        let frameSize = 320 * 240 * 3 / 2 + 6
        let headerEnd = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        bytes[headerEnd + 5 * frameSize] = UInt8(ascii: "X")
        let (source, _, result) = try runY4M(bytes)
        expectError(result, contains: "bad frame marker at frame 5", kind: .io)
        #expect(source.framesDelivered == 5)
    }

    @Test(arguments: [
        ("YUV4MPEG2 W320 H240 F25:1 C444\n", "unsupported colour space C444 (only 8-bit 4:2:0)"),
        ("YUV4MPEG2 W320 H240 F25:1 C422\n", "unsupported colour space C422"),
        ("YUV4MPEG2 W320 H240 F25:1 Cmono\n", "unsupported colour space Cmono"),
        ("YUV4MPEG2 W320 H240 F25:1 C420p10 XYSCSS=420P10\n", "unsupported colour space C420p10"),
        ("GIF89a garbage\n", "not a YUV4MPEG2 stream"),
        ("", "empty input"),
        ("YUV4MPEG2 W0 H240 F25:1\n", "bad width 'W0'"),
        ("YUV4MPEG2 W320 H9000 F25:1\n", "bad height 'H9000'"),
        ("YUV4MPEG2 W320 H240 F25:0\n", "bad frame rate 'F25:0'"),
        ("YUV4MPEG2 W320 H240 Fabc\n", "bad frame rate"),
        ("YUV4MPEG2 H240 F25:1\n", "no width"),
        ("YUV4MPEG2 W320 H240\n", "no frame rate"),
        ("YUV4MPEG2 W320 H240 F25:1", "input ended inside the header"),
        ("YUV4MPEG2 W320 H240 F25:1 " + String(repeating: "X", count: 1100) + "\n", "header longer than 1024 bytes"),
        (String(repeating: "Z", count: 2000), "not a YUV4MPEG2 stream"),
        // Issue 22: interlaced input is refused, header bytes quoted in errors are escaped.
        ("YUV4MPEG2 W320 H240 F25:1 It\n", "interlaced input (It: top field first) is not supported"),
        ("YUV4MPEG2 W320 H240 F25:1 Ib\n", "interlaced input (Ib: bottom field first)"),
        ("YUV4MPEG2 W320 H240 F25:1 Im\n", "interlaced input (Im: mixed)"),
        ("YUV4MPEG2 W320 H240 F25:1 Iq\n", "bad interlacing 'Iq'"),
        ("YUV4MPEG2 W320 H240 F25:1 Z\u{0}\u{1B}[2J\n", "unknown header tag 'Z\\x00\\x1b[2J'"),
        ("YUV4MPEG2 W3\u{0}2 H240 F25:1\n", "bad width 'W3\\x002'"),
        ("YUV4MPEG2 W320 H240 F25:1 C420\u{7F}\u{9B}\n", "unsupported colour space C420\\x7f\\xc2\\x9b"),
    ])
    func badHeadersAreClearErrors(header: String, expected: String) throws {
        let (source, sink, result) = try runY4M(Array(header.utf8))
        expectError(result, contains: expected)
        #expect(sink.all.isEmpty)
        #expect(!source.waitUntilFinished(timeoutNanoseconds: 0))  // never started a lane
        if case .failure(let e) = result {
            #expect(!e.message.unicodeScalars.contains { $0.value < 0x20 || $0.value >= 0x7F }, "raw bytes in \(e.message)")
        }
    }

    @Test func aDirectoryIsNoInput() throws {
        #expect(throws: CaptureError(.unavailable, "y4m: /tmp is a directory")) { try Y4MSource(path: "/tmp").open() }
    }

    @Test func acceptedColourSpacesAndFrameParameters() throws {
        for (c, i) in [("", " Ip"), (" C420", " I?"), (" C420jpeg", ""), (" C420paldv", " Ip"), (" C420mpeg2", " Ip")] {
            var bytes = Array("YUV4MPEG2 W4 H2 F30000:1001\(i) A1:1\(c) XCOLORRANGE=LIMITED\n".utf8)
            bytes += Array("FRAME\n".utf8) + [UInt8](repeating: 1, count: 12)
            bytes += Array("FRAME Ixyz\n".utf8) + [UInt8](repeating: 2, count: 12)
            let (source, sink, result) = try runY4M(bytes)
            #expect(throws: Never.self) { try result.get() }
            let frames = sink.lane(.video)
            #expect(frames.count == 2, "C tag '\(c)'")
            #expect(source.header?.frameRateDenominator == 1001)
            if frames.count == 2 {
                #expect(frames[1].pts - frames[0].pts == 33_366_667 || frames[1].pts - frames[0].pts == 33_366_666)
                #expect(frames[1].firstBytes.prefix(8) == [2, 2, 2, 2, 2, 2, 2, 2])
            }
        }
    }

    @Test func stopInterruptsAnIdlePipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[1]) }
        let header = Array("YUV4MPEG2 W64 H64 F25:1\n".utf8)
        _ = header.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
        defer { close(fds[0]) }
        let source = Y4MSource(path: "/proc/self/fd/\(fds[0])")
        try source.start(into: RecordingSink())
        #expect(source.header?.width == 64)
        #expect(!source.waitUntilFinished(timeoutNanoseconds: 200_000_000))
        source.stop()
        // Interrupted, not waited out: finished the moment stop() returns (the suite's time limit
        // turns a stop that never returns into a failure; how fast is a benchmark).
        #expect(source.waitUntilFinished(timeoutNanoseconds: 0), "still reading after stop() returned")
        #expect(source.error == nil)
    }
}

@Suite(.timeLimit(.minutes(2))) struct PCMSourceTests {
    @Test func parsesFormats() throws {
        #expect(try PCMFormat(parsing: "s16le:48000:2") == PCMFormat(sampleFormat: .s16, sampleRate: 48_000, channels: 2))
        #expect(try PCMFormat(parsing: "f32le:44100:1") == PCMFormat(sampleFormat: .f32, sampleRate: 44_100, channels: 1))
        for bad in ["s16le:48000", "u8:48000:2", "s16le:22050:2", "f32le:48000:6", ""] {
            #expect(throws: CaptureError.self) { try PCMFormat(parsing: bad) }
        }
    }

    @Test func deliversBuffersWithSampleCountPTS() throws {
        let frames = 48_000 + 100  // 46 full buffers and a short one
        var bytes: [UInt8] = []
        for i in 0..<frames {
            let v = Int16(truncatingIfNeeded: i)
            for _ in 0..<2 { bytes += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        }
        bytes += [0xAA]  // trailing partial frame, dropped
        let path = try temporaryFile(bytes, name: "in.pcm")
        defer { unlink(path) }
        let source = try PCMSource(path: path, format: try PCMFormat(parsing: "s16le:48000:2"), lane: .micAudio,
                                   realtime: false)
        let sink = RecordingSink()
        try source.start(into: sink)
        defer { source.stop() }  // joins the reader thread (TSan: thread leak otherwise)
        #expect(source.waitUntilFinished(timeoutNanoseconds: 5_000_000_000))
        #expect(source.error == nil)
        let buffers = sink.lane(.micAudio)
        #expect(buffers.count == 47)
        #expect(source.framesDelivered == frames)
        let t0 = try #require(buffers.first).pts
        var count = 0
        for b in buffers {
            #expect(b.validation == nil && b.channels == 2 && b.sampleRate == 48_000 && b.sampleFormat == .s16)
            #expect(b.pts == t0 + Int64(count) * 1_000_000_000 / 48_000)
            #expect(b.firstBytes[0] == UInt8(truncatingIfNeeded: count))
            count += b.frameCount
        }
        #expect(buffers.last?.frameCount == frames - 46 * 1024)
    }

    @Test func missingFileIsUnavailable() throws {
        let source = try PCMSource(path: "/nonexistent/x.pcm", format: PCMFormat(sampleFormat: .f32, sampleRate: 48_000, channels: 2))
        #expect(throws: CaptureError(.unavailable, "pcm: cannot open /nonexistent/x.pcm: No such file or directory (errno 2)")) {
            try source.start(into: RecordingSink())
        }
        #expect(throws: CaptureError.self) { try PCMSource(path: "-", format: .init(sampleFormat: .s16, sampleRate: 48_000, channels: 1), lane: .video) }
    }
}
