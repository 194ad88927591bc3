import BroadcastKit

/// Reads raw interleaved little-endian PCM from a file or stdin and delivers it on one
/// audio lane (app audio by default) in buffers of `framesPerBuffer` frames.
///
/// Buffer PTS = t0 + samples / rate, t0 being CLOCK_MONOTONIC at start. With `realtime`
/// (the default) a buffer is delivered once its last sample's time has come, like a live
/// device. End of input ends the source; a trailing partial frame is dropped.
public final class PCMSource: CaptureSource {
    public let path: String
    public let format: PCMFormat
    public let lane: SampleBufferType
    public let framesPerBuffer: Int
    public let realtime: Bool
    private let group = LaneGroup()

    /// Throws `.badInput` for a video lane or a buffer size outside 1...AudioBuffer.maxFrames.
    public init(path: String, format: PCMFormat, lane: SampleBufferType = .appAudio,
                framesPerBuffer: Int = 1024, realtime: Bool = true) throws(CaptureError) {
        guard lane != .video else { throw CaptureError(.badInput, "pcm: cannot deliver audio on the video lane") }
        guard (1...AudioBuffer.maxFrames).contains(framesPerBuffer) else {
            throw CaptureError(.badInput, "pcm: buffer of \(framesPerBuffer) frames outside 1..\(AudioBuffer.maxFrames)")
        }
        self.path = path
        self.format = format
        self.lane = lane
        self.framesPerBuffer = framesPerBuffer
        self.realtime = realtime
    }

    public var description: String { "pcm:\(path) (\(format))" }

    /// Sample frames handed to the sink so far.
    public var framesDelivered: Int { group.delivered }

    public var error: CaptureError? { group.error }

    /// The lane's read buffer of `framesPerBuffer` frames.
    public var plannedResidentBytes: Int { framesPerBuffer * format.bytesPerFrame }

    public func start(into sink: SampleBufferSink) throws(CaptureError) {
        guard !group.hasLaunched else { throw CaptureError(.io, "pcm: source already started") }
        let reader = try FileReader(path: path, what: "pcm", group: group)
        let worker = PCMLane(reader: reader, format: format, lane: lane, framesPerBuffer: framesPerBuffer,
                             pacer: Pacer(realtime: realtime))
        try group.spawn(name: "pcm-audio") { [group] in worker.run(sink: sink, group: group) }
    }

    public func stop() { group.stop() }

    public func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        group.waitUntilFinished(timeoutNanoseconds: timeoutNanoseconds)
    }
}

/// The PCM lane: read one buffer, wait until its end time, deliver.
private final class PCMLane: @unchecked Sendable {
    // Touched only by the lane's own thread once started.
    private let reader: FileReader
    private let format: PCMFormat
    private let lane: SampleBufferType
    private let pacer: Pacer
    private let buffer: UnsafeMutableRawBufferPointer

    init(reader: FileReader, format: PCMFormat, lane: SampleBufferType, framesPerBuffer: Int, pacer: Pacer) {
        self.reader = reader
        self.format = format
        self.lane = lane
        self.pacer = pacer
        buffer = .allocate(byteCount: framesPerBuffer * format.bytesPerFrame, alignment: 16)
    }

    deinit { buffer.deallocate() }

    func run(sink: SampleBufferSink, group: LaneGroup) {
        let rate = Int64(format.sampleRate)
        let t0 = MediaTime.now()
        var samples: Int64 = 0
        do throws(CaptureError) {
            while !group.isStopping {
                let got = try reader.read(into: buffer.baseAddress!, count: buffer.count)
                let frames = got / format.bytesPerFrame
                if frames == 0 || group.isStopping { return }
                let pts = t0 + MediaTime.nanoseconds(ticks: samples, num: rate, den: 1)
                let end = t0 + MediaTime.nanoseconds(ticks: samples + Int64(frames), num: rate, den: 1)
                guard pacer.wait(until: end, group: group) else { return }
                let audio = AudioBuffer(format: format.sampleFormat, channels: format.channels,
                                        sampleRate: format.sampleRate, frameCount: frames,
                                        data: UnsafeRawBufferPointer(rebasing: buffer[0..<(frames * format.bytesPerFrame)]),
                                        pts: pts)
                sink.process(.audio(audio), type: lane)
                group.countDelivered(frames)
                samples += Int64(frames)
                if got < buffer.count { return }
            }
        } catch {
            group.fail(error)
        }
    }
}
