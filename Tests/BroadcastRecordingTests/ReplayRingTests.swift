import Testing
@testable import BroadcastRecording
import BroadcastPipeline
import BroadcastFLV
import BroadcastCore
import BroadcastTestSupport

/// The replay ring: whole-GOP eviction, clips that start on a keyframe with their audio, the
/// pin a save holds, and no allocation per tag.
@Suite(.timeLimit(.minutes(5))) struct ReplayRingTests {
    /// 30 fps video with a keyframe every `gop` frames and 1024-sample AAC at 48 kHz, as FLV bodies.
    struct Feed {
        var videoBody = [UInt8](repeating: 0, count: 2000)
        var audioBody = [UInt8](repeating: 0, count: 300)
        var frame = 0
        var audioPacket = 0
        let gop: Int

        init(gop: Int = 60) {
            self.gop = gop
            videoBody[1] = 1; audioBody[0] = 0xAF; audioBody[1] = 1
        }

        /// Pushes tags up to `ms` in timestamp order.
        mutating func run(until ms: Int64, into ring: ReplayRing) {
            while true {
                let v = Int64(frame) * 1000 / 30
                let a = Int64(audioPacket) * 1024 * 1000 / 48000
                if min(v, a) > ms { return }
                if a <= v {
                    audioBody.withUnsafeBytes { ring.append(FLVTag(type: .audio, timestampMs: UInt32(a), body: $0).packet) }
                    audioPacket += 1
                } else {
                    let key = frame % gop == 0
                    videoBody[0] = key ? 0x17 : 0x27
                    videoBody.withUnsafeBytes {
                        ring.append(FLVTag(type: .video, timestampMs: UInt32(v), body: $0, isKeyframe: key).packet)
                    }
                    frame += 1
                }
            }
        }
    }

    static let video = VideoEncoderSettings(width: 64, height: 48, fps: 30, bitrateKbps: 600)
    static let audio = AudioEncoderSettings(codec: .aac, bitrateKbps: 96)

    func makeRing(seconds: Int) -> ReplayRing {
        ReplayRing(seconds: seconds, capacity: ReplayRing.capacity(seconds: seconds, video: Self.video, audio: Self.audio),
                   hasVideo: true, audioCodec: .aac)
    }

    @Test func keepsTheWindowInWholeGOPsAndClipsStartOnAKeyframe() {
        let ring = makeRing(seconds: 5)
        var feed = Feed()
        feed.run(until: 20_000, into: ring)
        // Between N and N + one GOP (2 s) held.
        #expect(ring.heldSeconds >= 5 && ring.heldSeconds < 7.1)
        let samples = UnsafeMutablePointer<MP4Sample>.allocate(capacity: ring.capacity.entries)
        defer { samples.deallocate() }
        let clip = ring.beginClip(seconds: 5, into: samples, capacity: ring.capacity.entries)
        #expect(clip != nil)
        guard let clip else { return }
        ring.endClip()
        let first = samples[0]
        #expect(first.isVideo && first.isKeyframe)
        #expect(first.timestampMs % 2000 == 0)
        let last = samples[clip.count - 1].timestampMs
        #expect(last - first.timestampMs >= 5000 - 34 && last - first.timestampMs < 7000)
        // The payload the MP4 gets leaves out the FLV header.
        #expect(first.size == 2000 - 5)
        // Every audio sample of the clip is at or after the keyframe.
        #expect((0..<clip.count).allSatisfy { samples[$0].timestampMs >= first.timestampMs })
    }

    /// A clip of the whole window still gets its AAC pre-roll: eviction keeps the two audio
    /// frames before the ring's first keyframe, and the clip carries them first (issue 25: a clip's
    /// first beep was 28-46 ms late without them).
    @Test func aClipOfTheWholeWindowCarriesItsAACPreRoll() {
        let ring = makeRing(seconds: 5)
        var feed = Feed()
        feed.run(until: 20_000, into: ring)
        let samples = UnsafeMutablePointer<MP4Sample>.allocate(capacity: ring.capacity.entries)
        defer { samples.deallocate() }
        // Asked for more than the ring holds: the clip starts at the ring's first keyframe.
        guard let clip = ring.beginClip(seconds: 60, into: samples, capacity: ring.capacity.entries,
                                        preRollAudio: ReplayRing.aacPreRollFrames) else {
            Issue.record("no clip")
            return
        }
        ring.endClip()
        #expect(clip.preRoll == ReplayRing.aacPreRollFrames)
        let key = samples[clip.preRoll]
        #expect(key.isVideo && key.isKeyframe)
        for i in 0..<clip.preRoll {
            #expect(!samples[i].isVideo && samples[i].timestampMs < key.timestampMs)
            #expect(key.timestampMs - samples[i].timestampMs <= 2 * 1024 * 1000 / 48000 + 1)
        }
        #expect(samples[0].timestampMs < samples[1].timestampMs)
    }

    @Test func aPinnedClipIsNeverOverwritten() {
        let ring = makeRing(seconds: 2)
        var feed = Feed()
        feed.run(until: 6_000, into: ring)
        let samples = UnsafeMutablePointer<MP4Sample>.allocate(capacity: ring.capacity.entries)
        defer { samples.deallocate() }
        guard let clip = ring.beginClip(seconds: 2, into: samples, capacity: ring.capacity.entries) else {
            Issue.record("nothing held"); return
        }
        // Mark the clip's bytes, run the stream on far past the ring's window, and check them.
        let start = samples[0].timestampMs
        UnsafeMutableRawPointer(mutating: samples[0].data).storeBytes(of: 0x5A, as: UInt8.self)
        feed.run(until: 30_000, into: ring)
        #expect(samples[0].data.load(as: UInt8.self) == 0x5A)
        #expect(ring.droppedTags > 0, "a ring pinned for 24 s has to leave tags out")
        ring.releaseClip(upTo: clip.firstSeq + Int64(clip.count))
        ring.endClip()
        feed.run(until: 40_000, into: ring)
        guard ring.beginClip(seconds: 2, into: samples, capacity: ring.capacity.entries) != nil else {
            Issue.record("nothing held after the pin"); return
        }
        ring.endClip()
        #expect(samples[0].isKeyframe && samples[0].timestampMs > start + 30_000)
    }

    @Test(.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)"))
    func appendAllocatesNothingInSteadyState() {
        let ring = makeRing(seconds: 3)
        var feed = Feed()
        feed.run(until: 10_000, into: ring)   // filled and wrapped
        let before = AllocationCounter.thisThread()
        feed.run(until: 40_000, into: ring)
        let allocations = AllocationCounter.thisThread() - before
        #expect(allocations == 0)
        #expect(ring.heldSeconds >= 3)
    }

    @Test func planGrowsWithSecondsAndCoversTheVBVRate() {
        let c30 = ReplayRing.capacity(seconds: 30, video: Self.video, audio: Self.audio)
        let c60 = ReplayRing.capacity(seconds: 60, video: Self.video, audio: Self.audio)
        // 30 s + one GOP at the VBV maximum, at least.
        #expect(c30.bytes >= (600 + 96) * 125 * 32)
        #expect(c60.reservedBytes > c30.reservedBytes)
    }
}
