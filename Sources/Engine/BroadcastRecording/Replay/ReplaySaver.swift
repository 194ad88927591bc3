#if canImport(Glibc)
import Glibc
import BroadcastCore
import BroadcastPipeline
#endif

/// Saves clips from a `ReplayRing` as MP4, on its own thread (`bk-replay`), one at a time.
///
/// A save pins the clip in the ring, writes the init segment and one fragment per GOP straight
/// from the ring's bytes, releasing each GOP once written, into a temporary `NAME.<random>.part`
/// created exclusively, then gives it its name without replacing anything (`OutputFile`): an
/// existing NAME (a file, a link, `/dev/null`) fails the save with a line naming it.
/// The sample table and the `moof` buffer are allocated at init, sized by the ring, so a save
/// allocates nothing that grows with the clip. A failed save removes its partial file and
/// reports the reason; the stream is never touched.
package final class ReplaySaver: @unchecked Sendable {
    package typealias Completion = @Sendable (Result<ReplayClip, BroadcastError>) -> Void

    private struct Request {
        var path: String?
        var seconds: Double?
        var completion: Completion
    }

    package let ring: ReplayRing
    let settings: ReplaySettings
    private let writer: MP4FragmentWriter
    private let samples: UnsafeMutablePointer<MP4Sample>
    private let sampleCapacity: Int
    private let thread = WorkerThread(name: "bk-replay")
    private let lock = ConditionLock()
    private var pending: Request?
    private var busy = false
    private var stopping = false
    private var running = false
    /// What the last rehearsal wrote: stored so that the work is not optimised away (nothing reads it).
    private(set) var rehearsedBytes = 0

    package init(ring: ReplayRing, layout: MP4TrackLayout, settings: ReplaySettings) {
        self.ring = ring
        self.settings = settings
        sampleCapacity = ring.capacity.entries
        samples = .allocate(capacity: sampleCapacity)
        writer = MP4FragmentWriter(layout: layout, maxSamples: sampleCapacity)
        writer.dropCacheInterval = 4 << 20
    }

    deinit { samples.deallocate() }

    /// AAC frames a clip carries before its first keyframe: enough to cover the encoder's delay
    /// (1600 samples: two 1024-sample frames), so the decoder's overlap is whole at time 0.
    /// Opus (pre-skip in dOps, no edit list) takes none.
    private var preRollFrames: Int {
        guard let a = writer.layout.audio, a.primingSamples > 0 else { return 0 }
        return (a.primingSamples + a.frameSize - 1) / max(1, a.frameSize)
    }

    package func start() throws(WorkerThread.StartFailure) {
        try thread.start { [self] in loop() }
        lock.withLock { running = true }
    }

    /// Finishes a save in progress, fails one not yet started, and ends the thread.
    package func stop() {
        let dropped: Request? = lock.withLock {
            guard running else { return nil }
            stopping = true
            lock.broadcast()
            let r = pending
            pending = nil
            return r
        }
        dropped?.completion(.failure(.streaming("replay: the session finished before the clip was saved")))
        thread.join()
    }

    /// Queues a save; `completion` runs on the replay thread (or at once when refused).
    package func request(path: String?, seconds: Double?, completion: @escaping Completion) {
        let refusal: String? = lock.withLock {
            if !running || stopping { return "replay: the session is not running" }
            if busy || pending != nil { return "replay: a clip is already being saved" }
            pending = Request(path: path, seconds: seconds, completion: completion)
            lock.broadcast()
            return nil
        }
        if let r = refusal { completion(.failure(.configuration(r))) }
    }

    private func loop() {
        while true {
            lock.lock()
            while pending == nil && !stopping { lock.wait() }
            guard let r = pending else { lock.unlock(); return }
            pending = nil
            busy = true
            lock.unlock()
            let result = save(path: r.path, seconds: r.seconds)
            lock.withLock { busy = false }
            r.completion(result)
        }
    }

    /// Runs the save path once on a synthetic one-sample clip into a temporary file in the clip
    /// directory, removed at once. A process that dropped its start-up code pages
    /// (`ProcessTuning.releaseStartupPages`) would otherwise fault the save's code back in at
    /// the first clip (about 1.2 MB of the binary's text: naming, the MP4 writer, number
    /// formatting), so VmHWM would step up long after the ring filled. Skipped while a real save
    /// is pending or running; any failure here is silent (the real save reports its own).
    package func rehearse() {
        rehearsedBytes = 0
        let free: Bool = lock.withLock {
            guard running, !stopping, !busy, pending == nil else { return false }
            busy = true
            return true
        }
        guard free else { return }
        defer { lock.withLock { busy = false } }
        let path = Self.timestampedPath(directory: settings.directory)
        guard let (fd, temporary) = try? OutputFile.createTemporary(beside: path) else { return }
        defer {
            close(fd)
            unlink(temporary)
        }
        var payload = (UInt64(0), UInt64(0))
        withUnsafeBytes(of: &payload) { bytes in
            guard let base = bytes.baseAddress else { return }
            var count = 0
            if writer.layout.video != nil {
                samples[count] = MP4Sample(isVideo: true, isKeyframe: true, timestampMs: 0, compositionOffsetMs: 0,
                                           data: base, size: bytes.count)
                count += 1
            }
            if writer.layout.audio != nil, count < sampleCapacity {
                samples[count] = MP4Sample(isVideo: false, isKeyframe: true, timestampMs: 0, compositionOffsetMs: 0,
                                           data: base, size: bytes.count)
                count += 1
            }
            writer.reset()
            writer.audioLeadSamples = 0
            guard writer.writeInit(fd: fd, durationMs: 33) else { return }
            _ = writer.writeFragment(fd: fd, samples: UnsafeBufferPointer(start: samples, count: count), originMs: 0,
                                     nextVideoMs: nil)
            writer.patchDuration(fd: fd)
        }
        let refusal = "replay: \(OutputFileError(path, "already exists (never replaced)")); the stream is unaffected"
        rehearsedBytes = writer.bytesWritten + refusal.utf8.count
        writer.reset()
    }

    /// `DIR/replay-YYYYMMDD-HHMMSS.mp4` in UTC, with `-2`, `-3`... when that name is taken.
    static func timestampedPath(directory: String, now: time_t = time(nil)) -> String {
        var t = now
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let stamp = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
        let dir = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        var candidate = "\(dir)/replay-\(stamp).mp4"
        var n = 2
        while OutputFile.exists(candidate) {
            candidate = "\(dir)/replay-\(stamp)-\(n).mp4"
            n += 1
        }
        return candidate
    }

    private func save(path requested: String?, seconds requestedSeconds: Double?) -> Result<ReplayClip, BroadcastError> {
        let seconds = min(Double(ring.seconds), max(0.1, requestedSeconds ?? Double(ring.seconds)))
        let path = requested ?? Self.timestampedPath(directory: settings.directory)
        guard let clip = ring.beginClip(seconds: seconds, into: samples, capacity: sampleCapacity,
                                        preRollAudio: preRollFrames) else {
            return .failure(.configuration("replay: nothing buffered yet"))
        }
        defer { ring.endClip() }
        let all = UnsafeBufferPointer(start: samples, count: clip.count)
        guard clip.preRoll < clip.count else { return .failure(.configuration("replay: nothing buffered yet")) }
        let origin = all[clip.preRoll].timestampMs
        var lastVideo: Int64 = origin, lastAny: Int64 = origin
        for s in all {
            lastAny = max(lastAny, s.timestampMs)
            if s.isVideo { lastVideo = s.timestampMs }
        }
        let fps = writer.layout.video?.fps ?? 0
        let durationMs = writer.layout.video != nil ? lastVideo - origin + Int64(1000 / max(1, fps)) : lastAny - origin + 20

        // Refused before a byte is written when the name is taken (the rename checks again).
        if OutputFile.exists(path) {
            return .failure(.streaming("replay: \(OutputFileError(path, "already exists (never replaced)")); "
                                       + "the stream is unaffected"))
        }
        let fd: Int32, temporary: String
        do {
            (fd, temporary) = try OutputFile.createTemporary(beside: path)
        } catch {
            return .failure(.streaming("replay: \(error); the stream is unaffected"))
        }
        func failed(_ what: String) -> Result<ReplayClip, BroadcastError> {
            let reason = SystemError.describe()
            close(fd)
            unlink(temporary)
            return .failure(.streaming("replay: \(what) \(path) failed: \(reason); the stream is unaffected"))
        }
        writer.reset()
        // The clip starts mid-stream: its first AAC frame carries no priming. The pre-roll frames
        // before the origin are what the track holds ahead of presentation time 0, so the edit
        // list skips exactly them (none held: no edit, and the first frame plays as decoded).
        if let rate = writer.layout.audio?.sampleRate, writer.layout.audio?.primingSamples ?? 0 > 0 {
            writer.audioLeadSamples = clip.preRoll > 0 ? Int(origin - all[0].timestampMs) * rate / 1000 : 0
        }
        guard writer.writeInit(fd: fd, durationMs: durationMs) else { return failed("writing") }
        // One fragment per GOP, each released to the ring once written; the pre-roll rides in the first.
        var start = 0
        while start < all.count {
            var end = start + 1 + (start == 0 ? clip.preRoll : 0)
            while end < all.count && !(all[end].isKeyframe) && end - start < writer.maxSamples { end += 1 }
            var nextVideo: Int64?
            for s in all[end...] where s.isVideo { nextVideo = s.timestampMs; break }
            let fragment = UnsafeBufferPointer(rebasing: all[start..<end])
            guard writer.writeFragment(fd: fd, samples: fragment, originMs: origin, nextVideoMs: nextVideo) else {
                return failed("writing")
            }
            ring.releaseClip(upTo: clip.firstSeq + Int64(end - clip.preRoll))
            start = end
        }
        writer.patchDuration(fd: fd)
        guard fsync(fd) == 0 else { return failed("syncing") }
        guard close(fd) == 0 else {
            let reason = SystemError.describe()
            unlink(temporary)
            return .failure(.streaming("replay: closing \(path) failed: \(reason); the stream is unaffected"))
        }
        do {
            try OutputFile.publish(temporary, as: path)
        } catch {
            unlink(temporary)
            return .failure(.streaming("replay: \(error); the stream is unaffected"))
        }
        return .success(ReplayClip(path: path, durationSeconds: Double(writer.endMs) / 1000,
                                   bytes: writer.bytesWritten))
    }
}
