import BroadcastCore
import BroadcastPipeline

/// The last N seconds of encoded video and audio, kept in one byte ring allocated at init.
///
/// Fed with every packet the interleaver releases (so in stream order, with the live stream's
/// timestamps). It holds whole GOPs: it starts on a keyframe, and makes room by dropping the
/// oldest GOP with the audio interleaved in it, so whatever is saved starts on a keyframe with
/// the audio from that instant. Without video, an audio packet about once a second is a sync point.
///
/// A clip being saved pins its oldest entry: the ring never overwrites pinned bytes, so the
/// saver reads them outside the lock while new packets keep arriving. Should the ring fill up
/// against a pin (a save slower than the slack planned for), new packets are left out of the ring
/// until the next keyframe and counted; the live stream never waits. Nothing is allocated per packet.
package final class ReplayRing: @unchecked Sendable {
    /// One stored packet: its payload in the ring, its times and flags here.
    private struct Entry: TagByteRingEntry {
        var offset: Int
        var length: Int32
        var compositionOffsetMs: Int32
        var isVideo: Bool
        var isSync: Bool
        var timestampMs: Int64
        var byteCount: Int { Int(length) }
    }

    /// Sizes of a ring for `seconds`, from the encoders' settings.
    package struct Capacity: Sendable, Equatable {
        var bytes: Int
        var entries: Int
        var syncPoints: Int
        /// Everything preallocated for the ring and for saving a clip from it (sample table,
        /// moof buffer), for the memory plan.
        package var reservedBytes: Int {
            bytes + entries * MemoryLayout<Entry>.stride + syncPoints * MemoryLayout<Int64>.stride
                + entries * MemoryLayout<MP4Sample>.stride + MP4FragmentWriter.reservedBytes(maxSamples: entries)
        }
    }

    /// Plans a ring that keeps at least `seconds` after whole-GOP eviction: the VBV maximum rate
    /// over the window plus one VBV buffer (the most x264 may put out over any stretch), the
    /// audio rate (a quarter spare for Opus, which is VBR; vo-aacenc is CBR), and 16 bytes per
    /// packet of allocation slack. The window is `seconds` + one GOP (eviction is whole GOPs). A save
    /// releases the oldest GOP as soon as it is written, so a full ring waits on a pin for
    /// milliseconds; packets that arrive meanwhile are left out of the ring and counted.
    package static func capacity(seconds: Int, video: VideoEncoderSettings?, audio: AudioEncoderSettings?) -> Capacity {
        let gop = video.map { max(1, $0.keyframeIntervalSeconds) } ?? 1
        let window = seconds + gop
        var bytes = 0
        var perSecond = 0
        if let v = video {
            bytes += v.maxBitrateKbps * 125 * window + v.vbvBufferKbits * 125
            perSecond += v.fps
        }
        if let a = audio {
            bytes += a.bitrateKbps * 125 * window * (a.codec == .opus ? 5 : 4) / 4
            perSecond += a.sampleRate / 960 + 1          // 20 ms Opus frames at most
        }
        let entries = perSecond * window + 16
        bytes += entries * 16                             // allocation slack
        return Capacity(bytes: bytes, entries: entries, syncPoints: window * 4 + 16)
    }

    package let seconds: Int
    package let capacity: Capacity
    private let hasVideo: Bool
    private let audioCodec: AudioCodec?
    private var entries: TagByteRing<Entry>
    /// Sequence numbers of the sync entries held, oldest first.
    private var syncs: FixedRing<Int64>
    /// Sequence number of `entries[0]`, and of the next entry appended.
    private var frontSeq: Int64 = 0
    private var nextSeq: Int64 = 0
    private var pinSeq = Int64.max
    private var waitingForSync = true
    private var lastAudioSyncMs = Int64.min
    private let lock = ConditionLock()
    /// Tags left out while a pin held the space (see the type's note).
    private(set) var droppedTags = 0

    package init(seconds: Int, capacity: Capacity, hasVideo: Bool, audioCodec: AudioCodec?) {
        self.seconds = seconds
        self.capacity = capacity
        self.hasVideo = hasVideo
        self.audioCodec = audioCodec
        // Resident from the start, as the plan counts it (TagByteRing touches it all at init): the
        // ring walks its whole capacity before wrapping, so at a content bitrate below the planned
        // one its pages would keep becoming resident for many minutes (VmHWM growth long after the
        // ring's N seconds were full).
        entries = TagByteRing(bytes: capacity.bytes, entries: capacity.entries)
        syncs = FixedRing(capacity: capacity.syncPoints)
    }

    private var windowMs: Int64 { Int64(seconds) * 1000 }

    /// Copies one released packet in (configurations and metadata are not media: skipped).
    package func append(_ packet: EncodedPacket) {
        guard !packet.isConfig, !packet.data.isEmpty, packet.track != .data else { return }
        let isVideo = packet.track == .video
        guard isVideo ? hasVideo : audioCodec != nil else { return }
        let ts = packet.timestampMs
        lock.lock()
        defer { lock.unlock() }
        let isSync: Bool
        if hasVideo {
            isSync = isVideo && packet.isKeyframe
        } else {
            isSync = lastAudioSyncMs == Int64.min || ts - lastAudioSyncMs >= 1000
        }
        if waitingForSync && !isSync { return }
        // Keep only what the window needs: drop the oldest GOP once the next one alone covers it.
        while syncs.count >= 2, entryTime(syncs[1]) <= ts - windowMs, syncs[1] <= pinSeq { evictFrontGOP() }
        let size = packet.data.count
        var space: UnsafeMutableRawBufferPointer? = nil
        while true {
            if !(isSync && syncs.isFull) {
                space = entries.append(size: size) {
                    Entry(offset: $0, length: Int32(size), compositionOffsetMs: packet.compositionOffsetMs,
                          isVideo: isVideo, isSync: isSync, timestampMs: ts)
                }
            }
            if space != nil { break }
            guard syncs.count >= 2, syncs[1] <= pinSeq else { break }
            evictFrontGOP()
        }
        guard let body = space else {
            // Full against a pin (or one GOP larger than the ring): wait for the next sync point.
            if !waitingForSync { droppedTags += 1 }
            waitingForSync = true
            if entries.isEmpty && pinSeq == Int64.max { resetLocked() }
            return
        }
        waitingForSync = false
        body.baseAddress!.copyMemory(from: packet.data.baseAddress!, byteCount: size)
        if isSync {
            syncs.append(nextSeq)
            if !hasVideo { lastAudioSyncMs = ts }
        }
        nextSeq += 1
    }

    private func entryTime(_ seq: Int64) -> Int64 { entries[Int(seq - frontSeq)].timestampMs }

    /// AAC frames kept from an evicted GOP, just before the next sync point: a clip's pre-roll
    /// (`beginClip(preRollAudio:)`), enough for vo-aacenc's 1600-sample delay. The next eviction
    /// takes them with the GOP. Opus needs none (its pre-skip is in dOps).
    static let aacPreRollFrames = 2

    private func evictFrontGOP() {
        guard let _ = syncs.removeFirst() else { return }
        let stop = syncs.first ?? nextSeq
        var keepFrom = stop
        if syncs.first != nil && audioCodec == .aac {
            var kept = 0
            var seq = stop - 1
            while seq >= frontSeq && kept < Self.aacPreRollFrames {
                if !entries[Int(seq - frontSeq)].isVideo { kept += 1; keepFrom = seq }
                seq -= 1
            }
        }
        while frontSeq < keepFrom, entries.removeFirst() != nil {
            frontSeq += 1
        }
    }

    private func resetLocked() {
        entries.removeAll()
        syncs.removeAll()
        frontSeq = nextSeq
    }

    /// Seconds held now (first sync point to the newest packet).
    package var heldSeconds: Double {
        lock.withLock {
            guard let first = syncs.first, let last = entries.last else { return 0 }
            return Double(last.timestampMs - entryTime(first)) / 1000
        }
    }

    /// Pins the last `seconds` (from the latest sync point at or before that far back; all that
    /// is held when less) and describes them in `samples` as MP4 samples that point into the
    /// ring. Returns the sample count and the sequence number of the first, or nil when nothing
    /// is held. The pin stays until `endClip`; `releaseClip(upTo:)` gives back what was written.
    ///
    /// With `preRollAudio` > 0, up to that many audio frames from before the sync point (when the
    /// ring still holds them) come first, pinned too: a decoder starting mid-stream needs them to
    /// rebuild its state (AAC's overlapped transform), so the clip's own first frame decodes whole.
    /// `preRoll` says how many; sample `preRoll + i` is sequence `firstSeq + i`.
    func beginClip(seconds: Double, into samples: UnsafeMutablePointer<MP4Sample>, capacity: Int,
                           preRollAudio: Int = 0) -> (count: Int, firstSeq: Int64, preRoll: Int)? {
        lock.lock()
        defer { lock.unlock() }
        guard pinSeq == Int64.max, let newest = entries.last, syncs.count > 0 else { return nil }
        let target = newest.timestampMs - Int64(seconds * 1000)
        var start = syncs[0]
        for i in 0..<syncs.count where entryTime(syncs[i]) <= target { start = syncs[i] }
        var preStart = start, preRoll = 0
        var seq = start - 1
        while seq >= frontSeq && preRoll < min(preRollAudio, capacity - 1) {
            if !entries[Int(seq - frontSeq)].isVideo { preRoll += 1; preStart = seq }
            seq -= 1
        }
        func describe(_ e: Entry) -> MP4Sample {
            MP4Sample(isVideo: e.isVideo, isKeyframe: e.isSync, timestampMs: e.timestampMs,
                      compositionOffsetMs: e.compositionOffsetMs, data: entries.body(e).baseAddress!, size: Int(e.length))
        }
        var n = 0
        seq = preStart
        while seq < start {
            let e = entries[Int(seq - frontSeq)]
            if !e.isVideo { samples[n] = describe(e); n += 1 }
            seq += 1
        }
        let count = min(Int(nextSeq - start), capacity - preRoll)
        for i in 0..<count { samples[n + i] = describe(entries[Int(start - frontSeq) + i]) }
        pinSeq = preStart
        return (preRoll + count, start, preRoll)
    }

    /// Lets the ring reuse what a clip has written, up to (not including) `seq`.
    func releaseClip(upTo seq: Int64) {
        lock.withLock { if pinSeq != Int64.max { pinSeq = max(pinSeq, seq) } }
    }

    /// Ends the clip's pin.
    func endClip() {
        lock.withLock { pinSeq = Int64.max }
    }
}
