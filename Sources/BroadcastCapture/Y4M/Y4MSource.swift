import BroadcastKit

/// Reads raw video as YUV4MPEG2 (8-bit 4:2:0) from a file or stdin and delivers it on the
/// video lane as I420, e.g. `ffmpeg ... -f yuv4mpegpipe - | broadcast --source y4m:-`.
///
/// Frame n has PTS t0 + n * den / num seconds, t0 being CLOCK_MONOTONIC when the header
/// has been read. With `realtime` (the default) each frame is delivered at its PTS, like a
/// live camera; otherwise as fast as the sink takes it. End of input ends the source; a
/// truncated frame or a bad FRAME marker ends it with `error` set, of kind `.io`: once the
/// stream runs, bad input is a failure of the run in progress (exit 4), not a usage error.
public final class Y4MSource: CaptureSource {
    /// The path given at init ("-" = stdin).
    public let path: String
    public let realtime: Bool
    private let group = LaneGroup()
    private let headerState = Locked<Y4MHeader?>(nil)
    // The reader is created and the header parsed by open(); the lane thread then owns it.
    private let pending = Locked<FileReaderBox?>(nil)

    public init(path: String, realtime: Bool = true) {
        self.path = path
        self.realtime = realtime
    }

    public var description: String {
        if let h = header {
            return "y4m:\(path) (\(h.width)x\(h.height) @ \(h.frameRateNumerator)/\(h.frameRateDenominator) fps)"
        }
        return "y4m:\(path)"
    }

    /// The stream header, once `open()` or `start(into:)` has read it.
    public var header: Y4MHeader? { headerState.withLock { $0 } }

    /// Frames handed to the sink so far.
    public var framesDelivered: Int { group.delivered }

    public var error: CaptureError? { group.error }

    /// The lane's one frame buffer, sized from the header; 0 until `open()` has read it.
    public var plannedResidentBytes: Int { header?.frameByteCount ?? 0 }

    /// Opens the input and reads the header, so that a caller can learn the size and rate
    /// before starting. Called by `start(into:)` if not done yet. Blocks on a pipe until the
    /// producer writes the header.
    @discardableResult
    public func open() throws(CaptureError) -> Y4MHeader {
        if let h = header { return h }
        let reader = try FileReader(path: path, what: "y4m", group: group)
        var line: [UInt8] = []
        while true {
            guard let byte = try reader.readByte() else {
                throw CaptureError(.badInput, line.isEmpty ? "y4m: empty input (no YUV4MPEG2 header)"
                                   : "y4m: input ended inside the header")
            }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
            if line.count > Y4MHeader.maxLength {
                throw CaptureError(.badInput, line.starts(with: Array("YUV4MPEG2".utf8))
                                   ? "y4m: header longer than \(Y4MHeader.maxLength) bytes"
                                   : "y4m: not a YUV4MPEG2 stream (missing 'YUV4MPEG2 ' signature)")
            }
        }
        let parsed = try Y4MHeader.parse(line)
        headerState.withLock { $0 = parsed }
        pending.withLock { $0 = FileReaderBox(reader) }
        return parsed
    }

    public func start(into sink: SampleBufferSink) throws(CaptureError) {
        guard !group.hasLaunched else { throw CaptureError(.io, "y4m: source already started") }
        let h = try open()
        guard let box = pending.withLock({ state -> FileReaderBox? in
            let taken = state
            state = nil
            return taken
        }) else { throw CaptureError(.io, "y4m: input already consumed") }
        let lane = Y4MLane(reader: box.reader, header: h, pacer: Pacer(realtime: realtime))
        try group.spawn(name: "y4m-video") { [group] in lane.run(sink: sink, group: group) }
    }

    public func stop() { group.stop() }

    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        group.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }
}

/// Hands the reader from open() to the lane thread; after that only the lane touches it.
private final class FileReaderBox: @unchecked Sendable {
    let reader: FileReader
    init(_ reader: FileReader) { self.reader = reader }
}

/// The Y4M video lane: read FRAME line + payload into one buffer, wait for its PTS, deliver.
private final class Y4MLane: @unchecked Sendable {
    // Touched only by the lane's own thread once started.
    private let reader: FileReader
    private let header: Y4MHeader
    private let pacer: Pacer
    private let frame: UnsafeMutableRawBufferPointer

    init(reader: FileReader, header: Y4MHeader, pacer: Pacer) {
        self.reader = reader
        self.header = header
        self.pacer = pacer
        frame = .allocate(byteCount: header.frameByteCount, alignment: 64)
    }

    deinit { frame.deallocate() }

    private static let marker: [UInt8] = Array("FRAME".utf8)

    /// Reads the FRAME line. Returns false at a clean end of input (no byte of a new frame).
    private func readFrameLine(index: Int64) throws(CaptureError) -> Bool {
        for i in 0..<Y4MLane.marker.count {
            guard let byte = try reader.readByte() else {
                if i == 0 { return false }
                throw CaptureError(.badInput, "y4m: input ended inside the FRAME marker of frame \(index)")
            }
            guard byte == Y4MLane.marker[i] else {
                throw CaptureError(.badInput, "y4m: bad frame marker at frame \(index) (expected 'FRAME')")
            }
        }
        // Optional frame parameters up to the newline, bounded like the header.
        var length = 0
        while true {
            guard let byte = try reader.readByte() else {
                throw CaptureError(.badInput, "y4m: input ended inside the FRAME line of frame \(index)")
            }
            if byte == UInt8(ascii: "\n") { return true }
            if length == 0 && byte != UInt8(ascii: " ") {
                throw CaptureError(.badInput, "y4m: bad frame marker at frame \(index) (expected 'FRAME')")
            }
            length += 1
            if length > Y4MHeader.maxLength {
                throw CaptureError(.badInput, "y4m: FRAME line of frame \(index) longer than \(Y4MHeader.maxLength) bytes")
            }
        }
    }

    func run(sink: SampleBufferSink, group: LaneGroup) {
        let t0 = MediaTime.now()
        let num = Int64(header.frameRateNumerator), den = Int64(header.frameRateDenominator)
        let lumaSize = header.width * header.height
        let chromaSize = header.chromaByteCount
        let chromaStride = (header.width + 1) / 2
        let base = UnsafeRawPointer(frame.baseAddress!)
        var index: Int64 = 0
        do throws(CaptureError) {
            while !group.isStopping {
                guard try readFrameLine(index: index) else { sink.endOfInput(.video); return }
                let got = try reader.read(into: frame.baseAddress!, count: frame.count)
                if group.isStopping { return }
                guard got == frame.count else {
                    throw CaptureError(.badInput,
                                       "y4m: truncated frame \(index) (got \(got) of \(frame.count) bytes)")
                }
                let pts = t0 + MediaTime.nanoseconds(ticks: index, num: num, den: den)
                guard pacer.wait(until: pts, group: group) else { return }
                let video = VideoFrame(width: header.width, height: header.height, format: .i420,
                                       planes: (base, base + lumaSize, base + lumaSize + chromaSize),
                                       strides: (header.width, chromaStride, chromaStride),
                                       planeSizes: (lumaSize, chromaSize, chromaSize), pts: pts)
                sink.process(.video(video), type: .video)
                group.countDelivered(1)
                index += 1
            }
        } catch {
            group.fail(CaptureError(.io, error.message))
        }
    }
}
