// A tool embedding BroadcastKit: it renders its own frames and PCM and feeds them to a
// BroadcastSession, the way a ReplayKit upload extension's sample handler would.
//
//   swift run embed-example rtmp://127.0.0.1:1935/live my-key
#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

let args = CommandLine.arguments
let url = args.count > 1 ? args[1] : "rtmp://127.0.0.1:1935/live"
let key = args.count > 2 ? args[2] : "embed-example"

var config = BroadcastConfiguration.default
config.video = VideoEncoderSettings(width: 640, height: 360, fps: 30, bitrateKbps: 800)
config.audio = AudioEncoderSettings(codec: .aac, bitrateKbps: 96)
config.destinations = [.rtmp(url: url, streamKey: key)]

let session = BroadcastSession(configuration: config)
session.onEvent = { event in if case .failed(let why) = event { Log.line("embed-example: \(why)") } }
do {
    try session.start()
} catch {
    Log.line("embed-example: \(error.description)")
    exit(error.exitCode)
}

// 5 seconds of a BGRA gradient that moves, and a 440 Hz tone on the app-audio lane.
let width = 1280, height = 720            // any size: the session scales and letterboxes
let pixels = UnsafeMutableRawBufferPointer.allocate(byteCount: width * height * 4, alignment: 64)
let samples = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 1600 * 2)
defer { pixels.deallocate(); samples.deallocate() }
let start = MediaTime.now()
var phase = 0.0
for n in 0..<150 {
    let pts = start + Int64(n) * 33_333_333
    for y in 0..<height {
        for x in 0..<width {
            let p = (y * width + x) * 4
            pixels[p] = UInt8(truncatingIfNeeded: x + n * 4); pixels[p + 1] = UInt8(truncatingIfNeeded: y)
            pixels[p + 2] = 128; pixels[p + 3] = 255
        }
    }
    let frame = VideoFrame(packed: .bgra, width: width, height: height, stride: width * 4,
                           bytes: UnsafeRawBufferPointer(pixels), pts: pts)
    session.process(.video(frame), type: .video)

    for i in 0..<1600 {
        let v = Int16(sin(phase) * 8000)
        samples[2 * i] = v; samples[2 * i + 1] = v
        phase += 2 * Double.pi * 440 / 48_000
    }
    let audio = AudioBuffer(format: .s16, channels: 2, sampleRate: 48_000, frameCount: 1600,
                            data: UnsafeRawBufferPointer(samples), pts: pts)
    session.process(.audio(audio), type: .appAudio)

    // Pace like a live source; process() itself never blocks.
    var wake = timespec(tv_sec: Int((pts + 33_333_333) / 1_000_000_000), tv_nsec: Int((pts + 33_333_333) % 1_000_000_000))
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil)
}
session.finish()
let s = session.stats.snapshot()
print("sent \(s.videoFramesSent) video frames, \(s.audioFramesSent) audio frames, \(s.totalDrops) drops")
