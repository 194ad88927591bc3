import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Where finished transport-stream chunks go: whole 188-byte packets, at most 7 (1316 bytes, the
/// SRT live payload and what every SRT receiver expects per datagram).
protocol TSChunkOutput: AnyObject {
    func sendChunk(_ chunk: UnsafeRawBufferPointer) throws(TransportError)
}

/// The project's MPEG-2 transport stream muxer (ISO/IEC 13818-1): encoded packets in, TS packets out.
///
/// - H.264 goes out in Annex B, each access unit led by an AUD, and every IDR by the SPS and PPS of
///   the last sequence header (a receiver that joins late, or after loss, can start at any IDR).
/// - AAC goes out as ADTS (the packet is a raw access unit; the header comes from the
///   AudioSpecificConfig). Opus goes out as private PES data with the registration ('Opus') and
///   extension descriptors and the per-packet control header that FFmpeg's demuxer reads.
/// - PAT and PMT lead the stream and every keyframe (every 500 ms without video). PCR rides the
///   first packet of each video PES (audio when there is no video); PTS/DTS run `ptsLeadMs` ahead
///   of it as the receiver's buffering allowance.
/// - Continuity counters per PID; payloads are copied straight from the packet into preallocated
///   packets: no allocation per frame.
final class TSMuxer {
    static let packetSize = 188
    static let packetsPerChunk = 7
    static let chunkSize = packetSize * packetsPerChunk
    /// How far PTS/DTS lead PCR (the decoder's buffer allowance), as FFmpeg's default max_delay does.
    static let ptsLeadMs: Int64 = 400
    /// Tables are repeated at least this often (ms of media) when no keyframe brings them.
    static let tableIntervalMs: Int64 = 500
    /// NAL units per access unit we can lay out; x264 gives a handful (slices, SEI).
    static let maxSegments = 1024
    static let parameterSetCapacity = 4096

    private(set) var layout: TSStreamLayout
    private let chunk: UnsafeMutableRawBufferPointer
    private var chunkFill = 0
    /// Continuity counters: PAT, PMT, video, audio.
    private var continuity: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    /// SPS and PPS in Annex B, each after a 4-byte start code (from the last avcC).
    private let parameterSets: UnsafeMutableRawBufferPointer
    private var parameterSetBytes = 0
    private var nalLengthSize = 4
    /// ADTS fields from the AudioSpecificConfig: profile (object type − 1), frequency index, channels.
    private var adts: (profile: UInt8, frequencyIndex: UInt8, channels: UInt8)?
    /// One PES laid out as (pointer, count) pieces, gathered into packets without a copy in between.
    private let segments: UnsafeMutablePointer<(UnsafeRawPointer, Int)>
    private var segmentCount = 0
    /// Headers built per PES (PES header, ADTS, Opus control header).
    private let scratch: UnsafeMutableRawBufferPointer
    private var lastTablesMs: Int64?
    /// Access units that could not be laid out (more NAL units than `maxSegments`, or a malformed
    /// body), counted instead of sent.
    private(set) var droppedUnits = 0

    private static let startCode: [UInt8] = [0, 0, 0, 1]
    private static let accessUnitDelimiter: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0]
    private let constants: UnsafeMutableRawBufferPointer

    init(layout: TSStreamLayout) {
        self.layout = layout
        chunk = .allocate(byteCount: Self.chunkSize, alignment: 16)
        parameterSets = .allocate(byteCount: Self.parameterSetCapacity, alignment: 16)
        segments = .allocate(capacity: Self.maxSegments)
        scratch = .allocate(byteCount: 64, alignment: 16)
        constants = .allocate(byteCount: 16, alignment: 16)
        constants.copyBytes(from: Self.startCode + Self.accessUnitDelimiter)
    }

    deinit {
        chunk.deallocate()
        parameterSets.deallocate()
        segments.deallocate()
        scratch.deallocate()
        constants.deallocate()
    }

    /// What the muxer holds, for the memory plan.
    static var plannedBytes: Int {
        chunkSize + parameterSetCapacity + maxSegments * MemoryLayout<(UnsafeRawPointer, Int)>.stride + 64 + 16
    }

    /// A new connection: tables go out again before the next media, and the continuity counters
    /// restart (a new receiver session). The codec configuration is kept; it is resent anyway.
    func reset() {
        chunkFill = 0
        continuity = (0, 0, 0, 0)
        lastTablesMs = nil
    }

    /// Muxes one packet; complete chunks go to `output` as they fill, and the rest when the packet ends.
    func write(_ packet: EncodedPacket, to output: any TSChunkOutput) throws(TransportError) {
        let payload = packet.data
        guard !payload.isEmpty else { return }
        switch packet.codec {
        case .metadata: return
        case .h264:
            guard layout.hasVideo else { return }
            if packet.isConfig { readConfigurationRecord(payload) } else { try writeVideo(packet, to: output) }
        case .aac:
            guard layout.audioCodec == .aac else { return }
            if packet.isConfig { readAudioSpecificConfig(payload) } else { try writeAudio(packet, to: output) }
        case .opus:
            guard layout.audioCodec == .opus, !packet.isConfig else { return }
            try writeAudio(packet, to: output)
        }
        try flush(to: output)
    }

    /// Sends the partial chunk (whole packets), if any.
    func flush(to output: any TSChunkOutput) throws(TransportError) {
        guard chunkFill > 0 else { return }
        let n = chunkFill
        chunkFill = 0
        try output.sendChunk(UnsafeRawBufferPointer(start: chunk.baseAddress, count: n))
    }

    // MARK: - Codec configuration

    /// avcC: lengthSizeMinusOne, then SPS and PPS lists (ISO/IEC 14496-15 §5.3.3.1).
    private func readConfigurationRecord(_ r: UnsafeRawBufferPointer) {
        guard r.count >= 7 else { return }
        var out = 0
        var i = 5
        nalLengthSize = Int(r[4] & 3) + 1
        for list in 0..<2 {
            guard i < r.count else { return }
            let count = Int(list == 0 ? r[i] & 0x1F : r[i])
            i += 1
            for _ in 0..<count {
                guard i + 2 <= r.count else { return }
                let n = Int(r[i]) << 8 | Int(r[i + 1])
                i += 2
                guard i + n <= r.count, out + 4 + n <= parameterSets.count else { return }
                parameterSets.baseAddress!.advanced(by: out).copyMemory(from: constants.baseAddress!, byteCount: 4)
                parameterSets.baseAddress!.advanced(by: out + 4).copyMemory(from: r.baseAddress! + i, byteCount: n)
                out += 4 + n
                i += n
            }
        }
        parameterSetBytes = out
    }

    /// AudioSpecificConfig: 5 bits object type, 4 bits frequency index, 4 bits channels.
    private func readAudioSpecificConfig(_ c: UnsafeRawBufferPointer) {
        guard c.count >= 2 else { return }
        let objectType = c[0] >> 3
        let frequency = (c[0] & 7) << 1 | c[1] >> 7
        let channels = (c[1] >> 3) & 0xF
        guard objectType >= 1, objectType <= 4, frequency < 13 else { adts = nil; return }
        adts = (objectType - 1, frequency, channels)
    }

    // MARK: - PES

    private func writeVideo(_ packet: EncodedPacket, to output: any TSChunkOutput) throws(TransportError) {
        let body = packet.data
        let dts = packet.timestampMs
        let pts = packet.presentationMs
        segmentCount = 0
        let headerBytes = pesHeader(streamID: TSStreamLayout.videoStreamID, ptsMs: pts, dtsMs: dts, payloadBytes: nil)
        var total = headerBytes
        addSegment(UnsafeRawPointer(scratch.baseAddress!), headerBytes)
        addSegment(UnsafeRawPointer(constants.baseAddress! + 4), 6)
        total += 6
        if packet.isKeyframe && parameterSetBytes > 0 {
            addSegment(UnsafeRawPointer(parameterSets.baseAddress!), parameterSetBytes)
            total += parameterSetBytes
        }
        var i = 0
        while i + nalLengthSize <= body.count {
            var n = 0
            for k in 0..<nalLengthSize { n = n << 8 | Int(body[i + k]) }
            i += nalLengthSize
            guard n > 0, i + n <= body.count, segmentCount + 2 <= Self.maxSegments else { droppedUnits += 1; return }
            addSegment(UnsafeRawPointer(constants.baseAddress!), 4)
            addSegment(UnsafeRawPointer(body.baseAddress! + i), n)
            total += 4 + n
            i += n
        }
        if packet.isKeyframe || lastTablesMs == nil { try writeTables(atMs: dts, to: output) }
        try writePES(pid: TSStreamLayout.videoPID, totalBytes: total, pcrMs: layout.pcrPID == TSStreamLayout.videoPID ? dts : nil,
                     randomAccess: packet.isKeyframe, to: output)
    }

    private func writeAudio(_ packet: EncodedPacket, to output: any TSChunkOutput) throws(TransportError) {
        let payload = packet.data
        let ms = packet.timestampMs
        // Without video nothing else brings the tables; with video, the first keyframe does, and
        // audio before it would reach a receiver that has no PMT yet.
        if layout.hasVideo {
            guard lastTablesMs != nil else { return }
        } else if lastTablesMs.map({ ms - $0 >= Self.tableIntervalMs || ms < $0 }) ?? true {
            try writeTables(atMs: ms, to: output)
        }
        segmentCount = 0
        // The codec header goes after the PES header in the same scratch buffer.
        let codecHeader: Int
        let codecHeaderOffset = 32
        let h = scratch.baseAddress! + codecHeaderOffset
        if layout.audioCodec == .opus {
            // Opus control header: 11-bit prefix 0x3FF, no trim or extension flags, then the size
            // as a run of 0xFF bytes and a final byte (the Opus-in-TS mapping FFmpeg implements).
            var n = payload.count
            guard n / 255 + 3 <= 32 else { droppedUnits += 1; return }
            h.storeBytes(of: 0x7F, toByteOffset: 0, as: UInt8.self)
            h.storeBytes(of: 0xE0, toByteOffset: 1, as: UInt8.self)
            var k = 2
            while n >= 255 { h.storeBytes(of: 0xFF, toByteOffset: k, as: UInt8.self); k += 1; n -= 255 }
            h.storeBytes(of: UInt8(n), toByteOffset: k, as: UInt8.self)
            codecHeader = k + 1
        } else {
            guard let a = adts else { droppedUnits += 1; return }
            let length = payload.count + 7
            guard length < 1 << 13 else { droppedUnits += 1; return }
            h.storeBytes(of: 0xFF, toByteOffset: 0, as: UInt8.self)
            h.storeBytes(of: 0xF1, toByteOffset: 1, as: UInt8.self)  // MPEG-4, layer 0, no CRC
            h.storeBytes(of: a.profile << 6 | a.frequencyIndex << 2 | a.channels >> 2, toByteOffset: 2, as: UInt8.self)
            h.storeBytes(of: (a.channels & 3) << 6 | UInt8(length >> 11), toByteOffset: 3, as: UInt8.self)
            h.storeBytes(of: UInt8((length >> 3) & 0xFF), toByteOffset: 4, as: UInt8.self)
            h.storeBytes(of: UInt8((length & 7) << 5) | 0x1F, toByteOffset: 5, as: UInt8.self)
            h.storeBytes(of: 0xFC, toByteOffset: 6, as: UInt8.self)
            codecHeader = 7
        }
        let payloadBytes = codecHeader + payload.count
        let headerBytes = pesHeader(streamID: layout.audioStreamID, ptsMs: ms, dtsMs: ms, payloadBytes: payloadBytes)
        addSegment(UnsafeRawPointer(scratch.baseAddress!), headerBytes)
        addSegment(UnsafeRawPointer(h), codecHeader)
        addSegment(UnsafeRawPointer(payload.baseAddress!), payload.count)
        try writePES(pid: TSStreamLayout.audioPID, totalBytes: headerBytes + payloadBytes,
                     pcrMs: layout.pcrPID == TSStreamLayout.audioPID ? ms : nil, randomAccess: !layout.hasVideo, to: output)
    }

    private func addSegment(_ p: UnsafeRawPointer, _ n: Int) {
        segments[segmentCount] = (p, n)
        segmentCount += 1
    }

    /// Writes the PES header into `scratch` and returns its size. `payloadBytes` nil: unbounded
    /// (PES_packet_length 0, allowed for video only).
    private func pesHeader(streamID: UInt8, ptsMs: Int64, dtsMs: Int64, payloadBytes: Int?) -> Int {
        let p = scratch.baseAddress!
        let withDTS = ptsMs != dtsMs
        let optional = withDTS ? 10 : 5
        let length = payloadBytes.map { 3 + optional + $0 } ?? 0
        p.storeBytes(of: 0, toByteOffset: 0, as: UInt8.self)
        p.storeBytes(of: 0, toByteOffset: 1, as: UInt8.self)
        p.storeBytes(of: 1, toByteOffset: 2, as: UInt8.self)
        p.storeBytes(of: streamID, toByteOffset: 3, as: UInt8.self)
        let l = length <= 0xFFFF ? length : 0
        p.storeBytes(of: UInt8(l >> 8), toByteOffset: 4, as: UInt8.self)
        p.storeBytes(of: UInt8(l & 0xFF), toByteOffset: 5, as: UInt8.self)
        p.storeBytes(of: streamID == TSStreamLayout.videoStreamID ? 0x84 : 0x80, toByteOffset: 6, as: UInt8.self)
        p.storeBytes(of: withDTS ? 0xC0 : 0x80, toByteOffset: 7, as: UInt8.self)
        p.storeBytes(of: UInt8(optional), toByteOffset: 8, as: UInt8.self)
        Self.writeTimestamp(Self.ticks(ptsMs), prefix: withDTS ? 3 : 2, to: p + 9)
        if withDTS { Self.writeTimestamp(Self.ticks(dtsMs), prefix: 1, to: p + 14) }
        return 9 + optional
    }

    /// 90 kHz ticks of a media time, led by `ptsLeadMs`, in 33 bits.
    static func ticks(_ ms: Int64) -> Int64 { ((ms + ptsLeadMs) * 90) & 0x1_FFFF_FFFF }

    private static func writeTimestamp(_ t: Int64, prefix: UInt8, to p: UnsafeMutableRawPointer) {
        p.storeBytes(of: prefix << 4 | UInt8((t >> 29) & 0x0E) | 1, as: UInt8.self)
        p.storeBytes(of: UInt8((t >> 22) & 0xFF), toByteOffset: 1, as: UInt8.self)
        p.storeBytes(of: UInt8((t >> 14) & 0xFE) | 1, toByteOffset: 2, as: UInt8.self)
        p.storeBytes(of: UInt8((t >> 7) & 0xFF), toByteOffset: 3, as: UInt8.self)
        p.storeBytes(of: UInt8((t << 1) & 0xFE) | 1, toByteOffset: 4, as: UInt8.self)
    }

    /// Cuts the laid-out PES into packets: the first carries the unit start (and PCR / random
    /// access flags), the last is padded with adaptation-field stuffing.
    private func writePES(pid: UInt16, totalBytes: Int, pcrMs: Int64?, randomAccess: Bool,
                          to output: any TSChunkOutput) throws(TransportError) {
        var remaining = totalBytes
        var segment = 0, offset = 0
        var first = true
        while remaining > 0 {
            let p = try nextPacket(to: output)
            let flags: UInt8 = first ? (randomAccess ? 0x40 : 0) | (pcrMs != nil ? 0x10 : 0) : 0
            // Adaptation field bytes, its length byte included.
            var adaptation = flags != 0 ? 2 + (pcrMs != nil && first ? 6 : 0) : 0
            var space = 184 - adaptation
            if remaining < space {
                adaptation += space - remaining
                space = remaining
            }
            let cc = nextContinuity(pid)
            p[0] = 0x47
            p[1] = (first ? 0x40 : 0) | UInt8(pid >> 8 & 0x1F)
            p[2] = UInt8(pid & 0xFF)
            p[3] = (adaptation > 0 ? 0x30 : 0x10) | cc
            if adaptation > 0 {
                p[4] = UInt8(adaptation - 1)
                if adaptation > 1 {
                    p[5] = flags
                    var k = 6
                    if first, let ms = pcrMs {
                        let base = (ms * 90) & 0x1_FFFF_FFFF
                        p[6] = UInt8(base >> 25 & 0xFF)
                        p[7] = UInt8(base >> 17 & 0xFF)
                        p[8] = UInt8(base >> 9 & 0xFF)
                        p[9] = UInt8(base >> 1 & 0xFF)
                        p[10] = UInt8((base & 1) << 7) | 0x7E
                        p[11] = 0
                        k = 12
                    }
                    while k < 4 + adaptation { p[k] = 0xFF; k += 1 }
                }
            }
            // Gather `space` bytes from the segments.
            var at = 4 + adaptation
            var need = space
            while need > 0 {
                let (base, count) = segments[segment]
                let n = min(need, count - offset)
                (UnsafeMutableRawPointer(p) + at).copyMemory(from: base + offset, byteCount: n)
                at += n; need -= n; offset += n
                if offset == count { segment += 1; offset = 0 }
            }
            remaining -= space
            first = false
        }
    }

    /// PAT then PMT, one packet each.
    private func writeTables(atMs ms: Int64, to output: any TSChunkOutput) throws(TransportError) {
        lastTablesMs = ms
        // PAT: program 1 → PMT PID.
        try writeSection(pid: 0, to: output) { s in
            s[0] = 0x00
            s[3] = 0x00; s[4] = 0x01          // transport_stream_id 1
            s[5] = 0xC1; s[6] = 0; s[7] = 0   // version 0, current; section 0 of 0
            s[8] = 0x00; s[9] = 0x01          // program_number 1
            s[10] = 0xE0 | UInt8(TSStreamLayout.pmtPID >> 8); s[11] = UInt8(TSStreamLayout.pmtPID & 0xFF)
            return 12
        }
        try writeSection(pid: TSStreamLayout.pmtPID, to: output) { s in
            s[0] = 0x02
            s[3] = 0x00; s[4] = 0x01          // program_number 1
            s[5] = 0xC1; s[6] = 0; s[7] = 0
            s[8] = 0xE0 | UInt8(layout.pcrPID >> 8); s[9] = UInt8(layout.pcrPID & 0xFF)
            s[10] = 0xF0; s[11] = 0           // no program descriptors
            var k = 12
            if layout.hasVideo {
                k = Self.stream(s, k, type: TSStreamLayout.h264StreamType, pid: TSStreamLayout.videoPID, descriptorBytes: 0)
            }
            switch layout.audioCodec {
            case .aac?:
                k = Self.stream(s, k, type: TSStreamLayout.adtsStreamType, pid: TSStreamLayout.audioPID, descriptorBytes: 0)
            case .opus?:
                k = Self.stream(s, k, type: TSStreamLayout.privateStreamType, pid: TSStreamLayout.audioPID, descriptorBytes: 10)
                // registration_descriptor 'Opus'; DVB extension descriptor, tag 0x80, channel config.
                s[k - 10] = 0x05; s[k - 9] = 4; s[k - 8] = 0x4F; s[k - 7] = 0x70; s[k - 6] = 0x75; s[k - 5] = 0x73
                s[k - 4] = 0x7F; s[k - 3] = 2; s[k - 2] = 0x80; s[k - 1] = UInt8(truncatingIfNeeded: layout.audioChannels)
            case nil: break
            }
            return k
        }
    }

    /// An elementary stream entry of the PMT; returns the offset after its descriptors, which the
    /// caller writes into the last `descriptorBytes` bytes.
    private static func stream(_ s: UnsafeMutablePointer<UInt8>, _ at: Int, type: UInt8, pid: UInt16,
                               descriptorBytes: Int) -> Int {
        s[at] = type
        s[at + 1] = 0xE0 | UInt8(pid >> 8)
        s[at + 2] = UInt8(pid & 0xFF)
        s[at + 3] = 0xF0 | UInt8(descriptorBytes >> 8)
        s[at + 4] = UInt8(descriptorBytes & 0xFF)
        return at + 5 + descriptorBytes
    }

    /// One PSI section in one packet: `fill` writes the section from its table_id and returns the
    /// bytes before the CRC; length and CRC are filled in here.
    private func writeSection(pid: UInt16, to output: any TSChunkOutput,
                              fill: (UnsafeMutablePointer<UInt8>) -> Int) throws(TransportError) {
        let p = try nextPacket(to: output)
        p[0] = 0x47
        p[1] = 0x40 | UInt8(pid >> 8 & 0x1F)
        p[2] = UInt8(pid & 0xFF)
        p[3] = 0x10 | nextContinuity(pid)
        p[4] = 0 // pointer_field
        let s = p + 5
        let end = fill(s)
        let sectionLength = end - 3 + 4
        s[1] = 0xB0 | UInt8(sectionLength >> 8)
        s[2] = UInt8(sectionLength & 0xFF)
        let crc = TSCRC32.checksum(UnsafeRawBufferPointer(start: s, count: end))
        s[end] = UInt8(crc >> 24); s[end + 1] = UInt8(crc >> 16 & 0xFF)
        s[end + 2] = UInt8(crc >> 8 & 0xFF); s[end + 3] = UInt8(crc & 0xFF)
        var k = 5 + end + 4
        while k < Self.packetSize { p[k] = 0xFF; k += 1 }
    }

    /// The next free packet of the chunk; a full chunk is sent first.
    private func nextPacket(to output: any TSChunkOutput) throws(TransportError) -> UnsafeMutablePointer<UInt8> {
        if chunkFill == Self.chunkSize { try flush(to: output) }
        let p = chunk.baseAddress!.advanced(by: chunkFill).assumingMemoryBound(to: UInt8.self)
        chunkFill += Self.packetSize
        return p
    }

    private func nextContinuity(_ pid: UInt16) -> UInt8 {
        func bump(_ c: inout UInt8) -> UInt8 { let v = c; c = (c + 1) & 0xF; return v }
        switch pid {
        case 0: return bump(&continuity.0)
        case TSStreamLayout.pmtPID: return bump(&continuity.1)
        case TSStreamLayout.videoPID: return bump(&continuity.2)
        default: return bump(&continuity.3)
        }
    }
}
