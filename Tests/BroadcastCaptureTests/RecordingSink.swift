import BroadcastKit
@testable import BroadcastCapture
import Synchronization

/// What the recording sink keeps of one buffer: plain values and copies, never the
/// borrowed pointers.
struct Record: Sendable {
    var type: SampleBufferType
    var pts: Int64
    /// CLOCK_MONOTONIC when process() was called.
    var deliveredAt: Int64
    // Video
    var width = 0
    var height = 0
    var pixelFormat: PixelFormat? = nil
    var validation: String? = nil
    var counter = -1
    var isWhite = false
    var byteCount = 0
    // Audio
    var sampleFormat: SampleFormat? = nil
    var channels = 0
    var sampleRate = 0
    var frameCount = 0
    /// Channel 0 as Float (S16 scaled by 1/32767); only when `keepSamples`.
    var samples: [Float] = []
    var firstBytes: [UInt8] = []
}

/// A thread-safe SampleBufferSink test double.
final class RecordingSink: SampleBufferSink {
    private let records = Mutex<[Record]>([])
    let keepSamples: Bool

    init(keepSamples: Bool = false) { self.keepSamples = keepSamples }

    func process(_ buffer: SampleBuffer, type: SampleBufferType) -> ProcessResult {
        let now = MediaTime.now()
        var record: Record
        switch buffer {
        case .video(let frame):
            record = Record(type: type, pts: frame.pts, deliveredAt: now)
            record.width = frame.width
            record.height = frame.height
            record.pixelFormat = frame.format
            record.validation = frame.validate()
            record.byteCount = frame.planeSizes.0 + frame.planeSizes.1 + frame.planeSizes.2
            if record.validation == nil, let y = frame.planes.0 {
                let bpp = frame.format == .i420 ? 1 : 4
                let strip = CounterStrip(width: frame.width, height: frame.height)
                record.counter = strip.decode(plane: y, stride: frame.strides.0, bytesPerPixel: bpp)
                record.isWhite = Self.looksWhite(frame, plane: y, bytesPerPixel: bpp)
                record.firstBytes = Array(UnsafeRawBufferPointer(start: y, count: min(16, frame.planeSizes.0)))
            }
        case .audio(let audio):
            record = Record(type: type, pts: audio.pts, deliveredAt: now)
            record.sampleFormat = audio.format
            record.channels = audio.channels
            record.sampleRate = audio.sampleRate
            record.frameCount = audio.frameCount
            record.byteCount = audio.data.count
            record.validation = audio.validate()
            record.firstBytes = Array(audio.data.prefix(16))
            if keepSamples, record.validation == nil {
                var samples = [Float](repeating: 0, count: audio.frameCount)
                for i in 0..<audio.frameCount {
                    let offset = i * audio.channels * audio.format.bytesPerSample
                    samples[i] = audio.format == .f32
                        ? audio.data.load(fromByteOffset: offset, as: Float.self)
                        : Float(audio.data.load(fromByteOffset: offset, as: Int16.self)) / 32767
                }
                record.samples = samples
            }
        }
        records.withLock { $0.append(record) }
        return .accepted
    }

    /// Samples a grid of points away from the counter strip: all of them white?
    private static func looksWhite(_ frame: VideoFrame, plane: UnsafeRawPointer, bytesPerPixel: Int) -> Bool {
        let white: UInt8 = frame.format == .i420 ? 235 : 255
        for fy in [1, 3, 5, 7] {
            for fx in [1, 3, 5, 7] {
                let x = frame.width * fx / 8, y = frame.height * fy / 8
                for c in 0..<min(bytesPerPixel, 3) {
                    if plane.load(fromByteOffset: y * frame.strides.0 + x * bytesPerPixel + c, as: UInt8.self) != white {
                        return false
                    }
                }
            }
        }
        return true
    }

    var all: [Record] { records.withLock { $0 } }
    func lane(_ type: SampleBufferType) -> [Record] { all.filter { $0.type == type } }
}
