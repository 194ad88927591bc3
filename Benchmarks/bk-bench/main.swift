// bk-bench: the measurements behind BENCHMARKS.md and the allocation test.
//
//   bk-bench floor    --res 720p --frames 600 [--preset veryfast]   x264 alone, frames already in memory
//   bk-bench pipeline --res 720p --frames 600 [--warmup 120] [--src-res WxH]
//                     BGRx frames -> libyuv convert/scale -> x264 -> FLV tags -> discard sink
//   bk-bench sessions --count N --res 360p --seconds S --url URL     N live test-source sessions in one process
//   bk-bench scaler   --src-res 2560x1440 --res 720p --frames 300
//                     FrameConverter (striped ARGBStripeScaler + ARGBToI420, allocation-free) against
//                     libyuv's whole-frame ARGBScale (bilinear) + ARGBToI420 on the same BGRx frame
//   bk-bench x264-memory --res 1080p --preset veryfast [--lean] [--frames 90]
//                     x264's resident memory for one configuration, against MemoryPlan's model:
//                     growth across x264_encoder_open and the working set of the first encodes.
//                     One configuration per process, so freed encoder pages do not hide the next
//                     one's growth (scripts/bench's x264model section runs each in its own process).
//
// Each prints one JSON object on stdout. Timing is CPU time from getrusage, so a noisy machine
// inflates wall time but not the per-frame CPU figures.
#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit
import CYUV

func die(_ m: String) -> Never { Log.line("bk-bench: \(m)"); exit(2) }

struct Args {
    var mode = ""
    var width = 1280, height = 720
    var srcWidth: Int?, srcHeight: Int?
    var frames = 600
    var warmup = 120
    var preset = "veryfast"
    var count = 1
    var seconds = 30.0
    var url = "rtmp://127.0.0.1:1935/live"
    var fps = 30
    var bitrate: Int?
    var audio = false
    var lean = false

    init(_ a: [String]) {
        guard let m = a.first else { die("mode required: floor | pipeline | sessions | scaler | x264-memory") }
        mode = m
        var i = 1
        func next() -> String { i += 1; guard i < a.count else { die("\(a[i - 1]) needs a value") }; return a[i] }
        func size(_ s: String) -> (Int, Int) {
            switch s {
            case "360p": return (640, 360)
            case "480p": return (854, 480)
            case "720p": return (1280, 720)
            case "1080p": return (1920, 1080)
            default:
                let p = s.split(separator: "x").compactMap { Int($0) }
                guard p.count == 2 else { die("bad size \(s)") }
                return (p[0], p[1])
            }
        }
        while i < a.count {
            switch a[i] {
            case "--res": (width, height) = size(next())
            case "--src-res": let (w, h) = size(next()); srcWidth = w; srcHeight = h
            case "--frames": frames = Int(next()) ?? 600
            case "--warmup": warmup = Int(next()) ?? 120
            case "--preset": preset = next()
            case "--count": count = Int(next()) ?? 1
            case "--seconds": seconds = Double(next()) ?? 30
            case "--url": url = next()
            case "--fps": fps = Int(next()) ?? 30
            case "--bitrate": bitrate = Int(next())
            case "--audio": audio = true
            case "--lean": lean = true
            default: die("unknown option \(a[i])")
            }
            i += 1
        }
    }

    var settings: VideoEncoderSettings {
        var v = VideoEncoderSettings.default
        v.width = width; v.height = height; v.fps = fps; v.preset = preset
        let kbps = bitrate ?? (width * height <= 640 * 360 ? 800 : width * height <= 854 * 480 ? 1200 : width * height <= 1280 * 720 ? 2500 : 4500)
        v.bitrateKbps = kbps; v.maxBitrateKbps = kbps; v.vbvBufferKbits = kbps
        return v
    }
}

func cpuSeconds() -> Double {
    var u = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &u)
    return Double(u.ru_utime.tv_sec) + Double(u.ru_utime.tv_usec) / 1e6 + Double(u.ru_stime.tv_sec) + Double(u.ru_stime.tv_usec) / 1e6
}

/// Allocation counter from tools/allocshim (LD_PRELOAD), or nil when not preloaded.
let allocCounter: (@convention(c) () -> UInt64)? = {
    guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "bk_alloc_count") else { return nil }
    return unsafeBitCast(sym, to: (@convention(c) () -> UInt64).self)
}()

/// Pre-rendered BGRx frames of a moving pattern with noise, so x264 does representative work.
final class FrameBank: @unchecked Sendable {
    let width: Int, height: Int, count: Int
    let bgrx: UnsafeMutableRawBufferPointer
    init(width: Int, height: Int, count: Int) {
        self.width = width; self.height = height; self.count = count
        bgrx = .allocate(byteCount: width * height * 4 * count, alignment: 64)
        var seed: UInt32 = 12345
        for f in 0..<count {
            let base = bgrx.baseAddress!.assumingMemoryBound(to: UInt8.self) + f * width * height * 4
            for y in 0..<height {
                for x in 0..<width {
                    seed = seed &* 1_103_515_245 &+ 12345
                    let noise = UInt8(truncatingIfNeeded: seed >> 27)
                    let p = base + (y * width + x) * 4
                    p[0] = UInt8(truncatingIfNeeded: x + f * 4) &+ noise
                    p[1] = UInt8(truncatingIfNeeded: y + f * 2) &+ noise
                    p[2] = UInt8(truncatingIfNeeded: (x ^ y) + f) &+ noise
                    p[3] = 255
                }
            }
        }
    }
    func frame(_ i: Int, pts: Int64) -> VideoFrame {
        let f = i % count
        let bytes = UnsafeRawBufferPointer(start: bgrx.baseAddress! + f * width * height * 4, count: width * height * 4)
        return VideoFrame(packed: .bgrx, width: width, height: height, stride: width * 4, bytes: bytes, pts: pts)
    }
}

let args = Args(Array(CommandLine.arguments.dropFirst()))
ProcessTuning.apply()

switch args.mode {
case "floor":
    let s = args.settings
    let bank = FrameBank(width: s.width, height: s.height, count: 30)
    let pool = FramePool(width: s.width, height: s.height, capacity: bank.count)
    let conv = FrameConverter(outputWidth: s.width, outputHeight: s.height)
    for i in 0..<bank.count { conv.convert(bank.frame(i, pts: 0), into: pool.frame(i)) }
    let enc: X264Encoder
    do { enc = try X264Encoder(settings: s) } catch { die("\(error)") }
    var bytes = 0
    for i in 0..<args.warmup { _ = enc.encode(pool.frame(i % bank.count), timestampMs: Int64(i * 33), forceKeyframe: false) { bytes += $0.data.count } }
    let c0 = cpuSeconds(), w0 = MediaTime.now()
    for i in 0..<args.frames {
        _ = enc.encode(pool.frame(i % bank.count), timestampMs: Int64((i + args.warmup) * 33), forceKeyframe: false) { bytes += $0.data.count }
    }
    let cpu = cpuSeconds() - c0, wall = Double(MediaTime.now() - w0) / 1e9
    print("{\"mode\":\"floor\",\"width\":\(s.width),\"height\":\(s.height),\"preset\":\"\(s.preset)\",\"frames\":\(args.frames),"
        + "\"cpu_s\":\(cpu),\"wall_s\":\(wall),\"cpu_ms_per_frame\":\(cpu * 1000 / Double(args.frames)),\"fps\":\(Double(args.frames) / wall),"
        + "\"peak_rss_bytes\":\(ProcessMemory.peakResidentBytes())}")

case "pipeline":
    let s = args.settings
    let sw = args.srcWidth ?? s.width, sh = args.srcHeight ?? s.height
    let bank = FrameBank(width: sw, height: sh, count: 30)
    var cfg = BroadcastConfiguration.default
    cfg.video = s
    cfg.hasAudio = args.audio
    cfg.destinations = [.discard]
    cfg.memoryBudgetBytes = 0
    cfg.adaptiveBitrate = false
    let session = BroadcastSession(configuration: cfg)
    do { try session.start() } catch { die("\(error)") }
    var pts: Int64 = 1_000_000_000
    // Audio per video frame: app 1600 frames F32 stereo at 48 kHz, mic 1470 frames S16 mono at
    // 44.1 kHz (through the resampler), so every lane and the mixer run in the measured window.
    let app = UnsafeMutableBufferPointer<Float>.allocate(capacity: 1600 * 2)
    let mic = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 1470)
    for i in 0..<1600 { let v = Float(sin(Double(i) * 2 * Double.pi * 440 / 48_000) * 0.2); app[2 * i] = v; app[2 * i + 1] = v }
    for i in 0..<1470 { mic[i] = Int16(sin(Double(i) * 2 * Double.pi * 660 / 44_100) * 6000) }
    // Full speed: a busy encoder is waited for, not polled (a 100 us sleep loop cost this
    // feeder thread several % of x264's CPU, billed to the pipeline). Live sources never wait.
    func retry(_ body: () -> ProcessResult) {
        while true {
            let r = body()
            if r == .dropped(.encoderBusy) {
                _ = session.waitForVideoCapacity(timeoutNs: 1_000_000_000)
            } else if r == .dropped(.audioLaneFull) {
                var ts = timespec(tv_sec: 0, tv_nsec: 100_000)
                nanosleep(&ts, nil)
            } else {
                return
            }
        }
    }
    func feed(_ n: Int, from start: Int) {
        for i in start..<(start + n) {
            pts += 33_333_333
            retry { session.process(.video(bank.frame(i, pts: pts)), type: .video) }
            if args.audio {
                let a = AudioBuffer(format: .f32, channels: 2, sampleRate: 48_000, frameCount: 1600,
                                    data: UnsafeRawBufferPointer(app), pts: pts)
                retry { session.process(.audio(a), type: .appAudio) }
                let m = AudioBuffer(format: .s16, channels: 1, sampleRate: 44_100, frameCount: 1470,
                                    data: UnsafeRawBufferPointer(mic), pts: pts)
                retry { session.process(.audio(m), type: .micAudio) }
            }
        }
    }
    let startupAllocations = allocCounter?() ?? 0
    feed(args.warmup, from: 0)
    // Let the warm-up drain so its frames are not billed to the measured ones.
    while session.stats.snapshot().videoFramesEncoded < args.warmup - 2 { var ts = timespec(tv_sec: 0, tv_nsec: 1_000_000); nanosleep(&ts, nil) }
    let a0 = allocCounter?() ?? 0
    let c0 = cpuSeconds(), w0 = MediaTime.now()
    feed(args.frames, from: args.warmup)
    while session.stats.snapshot().videoFramesEncoded < args.warmup + args.frames - 2 { var ts = timespec(tv_sec: 0, tv_nsec: 200_000); nanosleep(&ts, nil) }
    let cpu = cpuSeconds() - c0, wall = Double(MediaTime.now() - w0) / 1e9
    let allocs = (allocCounter?() ?? 0) - a0
    session.finish()
    let st = session.stats.snapshot()
    print("{\"mode\":\"pipeline\",\"width\":\(s.width),\"height\":\(s.height),\"src_width\":\(sw),\"src_height\":\(sh),"
        + "\"preset\":\"\(s.preset)\",\"frames\":\(args.frames),\"cpu_s\":\(cpu),\"wall_s\":\(wall),"
        + "\"cpu_ms_per_frame\":\(cpu * 1000 / Double(args.frames)),\"fps\":\(Double(args.frames) / wall),"
        + "\"allocations\":\(allocCounter == nil ? "null" : String(allocs)),"
        + "\"allocations_per_frame\":\(allocCounter == nil ? "null" : String(Double(allocs) / Double(args.frames))),"
        + "\"startup_allocations\":\(startupAllocations),\"audio_frames_sent\":\(st.audioFramesSent),"
        + "\"frames_encoded\":\(st.videoFramesEncoded),\"drops\":\(st.totalDrops),\"peak_rss_bytes\":\(ProcessMemory.peakResidentBytes())}")

case "scaler":
    let s = args.settings
    let sw = args.srcWidth ?? 2560, sh = args.srcHeight ?? 1440
    let src = UnsafeMutableRawBufferPointer.allocate(byteCount: sw * sh * 4, alignment: 64)
    var seed: UInt32 = 7
    for i in 0..<src.count { seed = seed &* 1_103_515_245 &+ 12345; src[i] = UInt8(truncatingIfNeeded: seed >> 24) }
    let frame = VideoFrame(packed: .bgrx, width: sw, height: sh, stride: sw * 4, bytes: UnsafeRawBufferPointer(src), pts: 1)
    let pool = FramePool(width: s.width, height: s.height, capacity: 1)
    let dst = pool.frame(0)
    let converter = FrameConverter(outputWidth: s.width, outputHeight: s.height)
    let geo = converter.convert(frame, into: dst)
    var c0 = cpuSeconds()
    for _ in 0..<args.frames { converter.convert(frame, into: dst) }
    let ours = (cpuSeconds() - c0) * 1000 / Double(args.frames)
    let argb = UnsafeMutablePointer<UInt8>.allocate(capacity: geo.width * geo.height * 4)
    let s8 = src.baseAddress!.assumingMemoryBound(to: UInt8.self)
    c0 = cpuSeconds()
    for _ in 0..<args.frames {
        ARGBScale(s8, Int32(sw * 4), Int32(sw), Int32(sh), argb, Int32(geo.width * 4), Int32(geo.width), Int32(geo.height),
                  kFilterBilinear)
        ARGBToI420(argb, Int32(geo.width * 4), dst.y, Int32(dst.strideY), dst.u, Int32(dst.strideUV), dst.v,
                   Int32(dst.strideUV), Int32(geo.width), Int32(geo.height))
    }
    let libyuv = (cpuSeconds() - c0) * 1000 / Double(args.frames)
    print("{\"mode\":\"scaler\",\"src_width\":\(sw),\"src_height\":\(sh),\"width\":\(geo.width),\"height\":\(geo.height),"
        + "\"frames\":\(args.frames),\"ours_cpu_ms_per_frame\":\(ours),\"libyuv_whole_frame_cpu_ms_per_frame\":\(libyuv)}")

case "sessions":
    var sessions: [BroadcastSession] = []
    var sources: [CaptureSource] = []
    let rss0 = ProcessMemory.residentBytes()
    for n in 0..<args.count {
        var cfg = BroadcastConfiguration.default
        cfg.video = args.settings
        cfg.destinations = [.rtmp(url: args.url, streamKey: "bench\(n)")]
        cfg.memoryBudgetBytes = 0
        let session = BroadcastSession(configuration: cfg)
        do { try session.start() } catch { die("\(error)") }
        var t = TestSourceSettings()
        t.width = args.width; t.height = args.height; t.fps = args.fps
        let src: TestSource
        do { src = try TestSource(settings: t); try src.start(into: session) } catch { die("\(error)") }
        sessions.append(session)
        sources.append(src)
    }
    let c0 = cpuSeconds(), w0 = MediaTime.now()
    var ts = timespec(tv_sec: Int(args.seconds), tv_nsec: Int((args.seconds - Double(Int(args.seconds))) * 1e9))
    nanosleep(&ts, nil)
    let cpu = cpuSeconds() - c0, wall = Double(MediaTime.now() - w0) / 1e9
    let rss = ProcessMemory.residentBytes()
    sources.forEach { $0.stop() }
    sessions.forEach { $0.finish() }
    let sent = sessions.reduce(0) { $0 + $1.stats.snapshot().videoFramesSent }
    let drops = sessions.reduce(0) { $0 + $1.stats.snapshot().totalDrops }
    print("{\"mode\":\"sessions\",\"count\":\(args.count),\"width\":\(args.width),\"height\":\(args.height),"
        + "\"cpu_percent\":\(cpu / wall * 100),\"cpu_percent_per_session\":\(cpu / wall * 100 / Double(args.count)),"
        + "\"rss_bytes\":\(rss),\"rss_before_bytes\":\(rss0),\"peak_rss_bytes\":\(ProcessMemory.peakResidentBytes()),"
        + "\"video_frames_sent\":\(sent),\"drops\":\(drops)}")

case "x264-memory":
    var s = args.settings
    if args.lean { s.tuning = .lean }
    let w = s.width, h = s.height
    // Moving textured content: a noise image scrolled 3 px right and 2 px down per frame (a still
    // picture would leave x264's motion search and its buffers idle).
    let margin = 256, bw = w + margin, bh = h + margin
    let base = UnsafeMutablePointer<UInt8>.allocate(capacity: bw * bh * 3 / 2)
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    for i in 0..<(bw * bh * 3 / 2) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17
        base[i] = UInt8(truncatingIfNeeded: seed)
    }
    let pool = FramePool(width: w, height: h, capacity: 1)
    let pic = pool.frame(0)
    func render(_ t: Int) {
        let dx = (t * 3) % margin, dy = (t * 2) % margin
        for y in 0..<h { memcpy(pic.y + y * pic.strideY, base + (y + dy) * bw + dx, w) }
        let cw = w / 2, cbw = bw / 2
        for (plane, dst) in [pic.u, pic.v].enumerated() {
            let sp = base + bw * bh + plane * cbw * (bh / 2)
            for y in 0..<(h / 2) { memcpy(dst + y * pic.strideUV, sp + (y + dy / 2) * cbw + dx / 2, cw) }
        }
    }
    render(0)
    let before = ProcessMemory.residentBytes()
    let enc: X264Encoder
    do { enc = try X264Encoder(settings: s) } catch { die("\(error)") }
    let atOpen = ProcessMemory.residentBytes() - before
    var bytes = 0
    let frames = args.frames == 600 ? 90 : args.frames
    for t in 0..<frames {
        render(t)
        _ = enc.encode(pic, timestampMs: Int64(t * 1000 / s.fps), forceKeyframe: false) { bytes += $0.data.count }
    }
    let working = ProcessMemory.peakResidentBytes() - before - atOpen
    print("{\"mode\":\"x264-memory\",\"width\":\(w),\"height\":\(h),\"preset\":\"\(s.preset)\",\"lean\":\(args.lean),"
        + "\"configuration\":\"\(EncoderLadder.label(s))\",\"frames\":\(frames),\"at_open_bytes\":\(atOpen),"
        + "\"working_bytes\":\(working),\"working_bytes_per_pixel\":\(Double(working) / Double(w * h)),"
        + "\"planned_working_bytes\":\(MemoryPlan.x264WorkingBytes(s)),\"kbps\":\(bytes * 8 * s.fps / frames / 1000)}")

default:
    die("unknown mode \(args.mode): floor | pipeline | sessions | scaler | x264-memory")
}
