import BroadcastCore
import BroadcastPipeline

/// `ftyp` + `moov` of a fragmented MP4 (ISO/IEC 14496-12): empty sample tables, an `mvex` with
/// `mehd` (the duration, patched at the end when known) and one `trex` per track; `avc1`/`avcC`,
/// `mp4a`/`esds` (ISO/IEC 14496-14) and `Opus`/`dOps` (the Opus-in-ISOBMFF mapping). An AAC
/// track with priming gets an `edts`/`elst` whose one edit starts at media time
/// `primingSamples` (see `MP4TrackLayout`).
///
/// Written once per file, so it may use a temporary buffer.
enum MP4InitSegment {
    /// Where the durations known only at the end sit in the segment.
    struct DurationOffsets {
        /// `mehd`'s 64-bit fragment_duration.
        var mehd: Int
        /// The audio edit's 32-bit segment_duration, or -1 without an edit list.
        var editDuration: Int
    }

    /// Writes the segment into `w`; returns where the durations are, for patching. The audio
    /// edit starts at `audioEditMediaTime` (default: the layout's priming; 0: no edit list),
    /// which must be what the track holds before presentation time 0 (a clip's pre-roll).
    @discardableResult
    static func write(_ layout: MP4TrackLayout, durationMs: UInt64, audioEditMediaTime: Int? = nil,
                              into w: inout MP4BoxWriter) -> DurationOffsets {
        let ftyp = w.begin("ftyp")
        w.fourCC("isom"); w.u32(0x200)
        w.fourCC("isom"); w.fourCC("iso6"); w.fourCC("iso2"); w.fourCC("avc1"); w.fourCC("mp41")
        w.end(ftyp)

        let moov = w.begin("moov")
        let mvhd = w.beginFull("mvhd", version: 0, flags: 0)
        w.u32(0); w.u32(0)                                   // creation, modification
        w.u32(UInt32(MP4TrackLayout.movieTimescale)); w.u32(0)  // duration: in mehd
        w.u32(0x0001_0000); w.u16(0x0100); w.zeros(10)      // rate 1.0, volume 1.0
        matrix(&w)
        w.zeros(24)
        w.u32(UInt32(layout.trackCount + 1))                 // next_track_ID
        w.end(mvhd)
        if let v = layout.video { videoTrak(v, id: layout.videoTrackID, into: &w) }
        var editDuration = -1
        if let a = layout.audio {
            editDuration = audioTrak(a, id: layout.audioTrackID, editMediaTime: audioEditMediaTime ?? a.primingSamples,
                                     durationMs: durationMs, into: &w)
        }

        let mvex = w.begin("mvex")
        let mehd = w.beginFull("mehd", version: 1, flags: 0)
        let durationAt = w.count
        w.u64(durationMs)
        w.end(mehd)
        if layout.video != nil { trex(&w, id: layout.videoTrackID, flags: 0x0101_0000) }
        if layout.audio != nil { trex(&w, id: layout.audioTrackID, flags: 0x0200_0000) }
        w.end(mvex)
        w.end(moov)
        return DurationOffsets(mehd: durationAt, editDuration: editDuration)
    }

    private static func matrix(_ w: inout MP4BoxWriter) {
        for v: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { w.u32(v) }
    }

    private static func trex(_ w: inout MP4BoxWriter, id: UInt32, flags: UInt32) {
        let b = w.beginFull("trex", version: 0, flags: 0)
        w.u32(id); w.u32(1); w.u32(0); w.u32(0); w.u32(flags)
        w.end(b)
    }

    private static func tkhd(_ w: inout MP4BoxWriter, id: UInt32, audio: Bool, width: Int, height: Int) {
        let b = w.beginFull("tkhd", version: 0, flags: 3)     // enabled, in movie
        w.u32(0); w.u32(0); w.u32(id); w.u32(0); w.u32(0)   // times, id, reserved, duration
        w.zeros(8); w.u16(0); w.u16(0)                       // reserved, layer, alternate group
        w.u16(audio ? 0x0100 : 0); w.u16(0)
        matrix(&w)
        w.u32(UInt32(width) << 16); w.u32(UInt32(height) << 16)
        w.end(b)
    }

    private static func mdhdHdlr(_ w: inout MP4BoxWriter, timescale: Int, handler: StaticString, name: StaticString) {
        let mdhd = w.beginFull("mdhd", version: 0, flags: 0)
        w.u32(0); w.u32(0); w.u32(UInt32(timescale)); w.u32(0)
        w.u16(0x55C4); w.u16(0)                              // language "und"
        w.end(mdhd)
        let hdlr = w.beginFull("hdlr", version: 0, flags: 0)
        w.u32(0); w.fourCC(handler); w.zeros(12)
        w.bytes(UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)); w.u8(0)
        w.end(hdlr)
    }

    private static func dinfAndEmptyTables(_ w: inout MP4BoxWriter, sampleEntry: (inout MP4BoxWriter) -> Void) {
        let dinf = w.begin("dinf")
        let dref = w.beginFull("dref", version: 0, flags: 0)
        w.u32(1)
        let url = w.beginFull("url ", version: 0, flags: 1)   // media in this file
        w.end(url)
        w.end(dref)
        w.end(dinf)
        let stbl = w.begin("stbl")
        let stsd = w.beginFull("stsd", version: 0, flags: 0)
        w.u32(1)
        sampleEntry(&w)
        w.end(stsd)
        for t: StaticString in ["stts", "stsc", "stco"] {
            let b = w.beginFull(t, version: 0, flags: 0); w.u32(0); w.end(b)
        }
        let stsz = w.beginFull("stsz", version: 0, flags: 0); w.u32(0); w.u32(0); w.end(stsz)
        w.end(stbl)
    }

    private static func videoTrak(_ v: MP4TrackLayout.Video, id: UInt32, into w: inout MP4BoxWriter) {
        let trak = w.begin("trak")
        tkhd(&w, id: id, audio: false, width: v.width, height: v.height)
        let mdia = w.begin("mdia")
        mdhdHdlr(&w, timescale: MP4TrackLayout.videoTimescale, handler: "vide", name: "VideoHandler")
        let minf = w.begin("minf")
        let vmhd = w.beginFull("vmhd", version: 0, flags: 1); w.zeros(8); w.end(vmhd)
        dinfAndEmptyTables(&w) { w in
            let avc1 = w.begin("avc1")
            w.zeros(6); w.u16(1)                              // reserved, data_reference_index
            w.zeros(16)                                       // pre_defined, reserved
            w.u16(UInt16(v.width)); w.u16(UInt16(v.height))
            w.u32(0x0048_0000); w.u32(0x0048_0000); w.u32(0)  // 72 dpi, reserved
            w.u16(1); w.zeros(32)                             // frame_count, compressorname
            w.u16(0x0018); w.u16(0xFFFF)                      // depth, pre_defined -1
            let avcC = w.begin("avcC")
            v.avcC.withUnsafeBytes { w.bytes($0) }
            w.end(avcC)
            w.end(avc1)
        }
        w.end(minf)
        w.end(mdia)
        w.end(trak)
    }

    /// Returns the offset of the edit's segment_duration (-1 without an edit list).
    private static func audioTrak(_ a: MP4TrackLayout.Audio, id: UInt32, editMediaTime: Int, durationMs: UInt64,
                                  into w: inout MP4BoxWriter) -> Int {
        let trak = w.begin("trak")
        tkhd(&w, id: id, audio: true, width: 0, height: 0)
        let editDuration = editMediaTime > 0 ? edts(mediaTime: editMediaTime, durationMs: durationMs, into: &w) : -1
        let mdia = w.begin("mdia")
        mdhdHdlr(&w, timescale: a.sampleRate, handler: "soun", name: "SoundHandler")
        let minf = w.begin("minf")
        let smhd = w.beginFull("smhd", version: 0, flags: 0); w.u32(0); w.end(smhd)
        dinfAndEmptyTables(&w) { w in
            let entry = a.codec == .opus ? w.begin("Opus") : w.begin("mp4a")
            w.zeros(6); w.u16(1)
            w.zeros(8)
            w.u16(UInt16(a.channels)); w.u16(16); w.zeros(4)
            w.u32(UInt32(min(a.sampleRate, 0xFFFF)) << 16)
            if a.codec == .opus { dOps(a, into: &w) } else { esds(a, into: &w) }
            w.end(entry)
        }
        w.end(minf)
        w.end(mdia)
        w.end(trak)
        return editDuration
    }

    /// `edts` with one `elst` edit: the presentation plays the media from `mediaTime` (track
    /// timescale) on. Its segment_duration (movie timescale) is `durationMs`, 0 while unknown
    /// (a recording patches it at the end, like `mehd`). Returns its offset.
    private static func edts(mediaTime: Int, durationMs: UInt64, into w: inout MP4BoxWriter) -> Int {
        let edts = w.begin("edts")
        let elst = w.beginFull("elst", version: 0, flags: 0)
        w.u32(1)                                             // entry_count
        let durationAt = w.count
        w.u32(UInt32(min(durationMs, UInt64(UInt32.max))))   // segment_duration
        w.u32(UInt32(mediaTime))                             // media_time
        w.u16(1); w.u16(0)                                   // media_rate 1.0
        w.end(elst)
        w.end(edts)
        return durationAt
    }

    /// ES_Descriptor with DecoderConfigDescriptor (AAC, object type 0x40) and the AudioSpecificConfig.
    private static func esds(_ a: MP4TrackLayout.Audio, into w: inout MP4BoxWriter) {
        let b = w.beginFull("esds", version: 0, flags: 0)
        let asc = a.config.count
        w.u8(0x03); w.u8(UInt8(3 + 2 + 13 + 2 + asc + 3))     // ES_Descriptor
        w.u16(0); w.u8(0)                                    // ES_ID, flags
        w.u8(0x04); w.u8(UInt8(13 + 2 + asc))                // DecoderConfigDescriptor
        w.u8(0x40); w.u8(0x15)                               // Audio ISO/IEC 14496-3, AudioStream
        w.u24(0)                                             // bufferSizeDB
        w.u32(UInt32(a.bitrateKbps * 1000)); w.u32(UInt32(a.bitrateKbps * 1000))
        w.u8(0x05); w.u8(UInt8(asc))                         // DecoderSpecificInfo
        a.config.withUnsafeBytes { w.bytes($0) }
        w.u8(0x06); w.u8(1); w.u8(0x02)                      // SLConfigDescriptor: predefined MP4
        w.end(b)
    }

    /// OpusSpecificBox: OpusHead's fields, big-endian, without the magic and version.
    private static func dOps(_ a: MP4TrackLayout.Audio, into w: inout MP4BoxWriter) {
        let h = a.config
        let b = w.begin("dOps")
        w.u8(0)                                              // Version
        w.u8(h.count > 9 ? h[9] : UInt8(a.channels))         // OutputChannelCount
        w.u16(h.count > 11 ? UInt16(h[10]) | UInt16(h[11]) << 8 : 0)   // PreSkip
        let rate = h.count > 15 ? UInt32(h[12]) | UInt32(h[13]) << 8 | UInt32(h[14]) << 16 | UInt32(h[15]) << 24
            : UInt32(a.sampleRate)
        w.u32(rate)                                          // InputSampleRate
        w.u16(h.count > 17 ? UInt16(h[16]) | UInt16(h[17]) << 8 : 0)   // OutputGain
        w.u8(0)                                              // ChannelMappingFamily
        w.end(b)
    }
}
