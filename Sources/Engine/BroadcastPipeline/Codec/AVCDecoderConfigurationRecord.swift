import BroadcastCore

/// Builds the AVCDecoderConfigurationRecord (ISO/IEC 14496-15 §5.2.4.1), the payload of the
/// FLV AVC sequence-header tag, from one SPS and one PPS (raw NAL units, no length prefix).
enum AVCDecoderConfigurationRecord {
    /// 4-byte NAL length prefixes, as x264 writes with b_annexb = 0.
    static let nalLengthSize = 4

    /// Bytes the record takes for these parameter sets.
    static func byteCount(sps: UnsafeRawBufferPointer, pps: UnsafeRawBufferPointer) -> Int {
        11 + sps.count + pps.count + (hasChromaExtension(profile: sps.count > 1 ? sps[1] : 0) ? 4 : 0)
    }

    /// Writes the record into `out` (at least `byteCount` bytes) and returns the bytes written.
    static func write(sps: UnsafeRawBufferPointer, pps: UnsafeRawBufferPointer,
                             into out: UnsafeMutableRawBufferPointer) throws(EncoderError) -> Int {
        guard sps.count >= 4, sps[0] & 0x1F == 7 else {
            throw .libraryFailure("SPS missing or malformed (\(sps.count) bytes)")
        }
        guard pps.count >= 1, pps[0] & 0x1F == 8 else {
            throw .libraryFailure("PPS missing or malformed (\(pps.count) bytes)")
        }
        guard sps.count <= 0xFFFF, pps.count <= 0xFFFF else { throw .libraryFailure("parameter set too large") }
        let total = byteCount(sps: sps, pps: pps)
        guard out.count >= total else { throw .libraryFailure("record buffer too small") }

        var at = 0
        func put(_ b: UInt8) { out[at] = b; at += 1 }
        func put16(_ v: Int) { put(UInt8(v >> 8)); put(UInt8(v & 0xFF)) }
        func put(_ bytes: UnsafeRawBufferPointer) {
            out.baseAddress!.advanced(by: at).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
            at += bytes.count
        }

        put(1)                                   // configurationVersion
        put(sps[1])                              // AVCProfileIndication
        put(sps[2])                              // profile_compatibility
        put(sps[3])                              // AVCLevelIndication
        put(0xFC | UInt8(nalLengthSize - 1))     // reserved 6 bits + lengthSizeMinusOne
        put(0xE0 | 1)                            // reserved 3 bits + numOfSequenceParameterSets
        put16(sps.count)
        put(sps)
        put(1)                                   // numOfPictureParameterSets
        put16(pps.count)
        put(pps)
        if hasChromaExtension(profile: sps[1]) {
            // High profiles carry chroma format and bit depths, read from the SPS itself.
            let ext = try parseChroma(sps: sps)
            put(0xFC | ext.chromaFormat)
            put(0xF8 | ext.lumaDepthMinus8)
            put(0xF8 | ext.chromaDepthMinus8)
            put(0)                               // numOfSequenceParameterSetExt
        }
        return at
    }

    /// Profiles for which §5.2.4.1 appends chroma_format and bit depth fields.
    static func hasChromaExtension(profile: UInt8) -> Bool {
        profile == 100 || profile == 110 || profile == 122 || profile == 144
    }

    /// Reads chroma_format_idc and bit depths from a high-profile SPS (ITU-T H.264 §7.3.2.1.1).
    static func parseChroma(sps: UnsafeRawBufferPointer) throws(EncoderError)
        -> (chromaFormat: UInt8, lumaDepthMinus8: UInt8, chromaDepthMinus8: UInt8) {
        var reader = RBSPBitReader(sps, startByte: 4)  // after NAL header, profile, constraints, level
        _ = reader.unsignedExpGolomb()                 // seq_parameter_set_id
        let chroma = reader.unsignedExpGolomb()
        if chroma == 3 { _ = reader.bit() }            // separate_colour_plane_flag
        let luma = reader.unsignedExpGolomb()
        let chromaDepth = reader.unsignedExpGolomb()
        guard !reader.overrun, chroma <= 3, luma <= 6, chromaDepth <= 6 else {
            throw .libraryFailure("SPS chroma/bit-depth fields unreadable")
        }
        return (UInt8(chroma), UInt8(luma), UInt8(chromaDepth))
    }
}

/// Bit reader over a NAL unit that skips emulation-prevention bytes (00 00 03).
struct RBSPBitReader {
    private let bytes: UnsafeRawBufferPointer
    private var byteIndex: Int
    private var bitIndex = 0
    private var zeros = 0
    private(set) var overrun = false
    private var current: UInt8 = 0

    init(_ bytes: UnsafeRawBufferPointer, startByte: Int) {
        self.bytes = bytes
        self.byteIndex = startByte - 1
        self.bitIndex = 8
    }

    mutating func bit() -> UInt32 {
        if bitIndex == 8 {
            byteIndex += 1
            if byteIndex < bytes.count, zeros >= 2, bytes[byteIndex] == 3 {
                byteIndex += 1
                zeros = 0
            }
            guard byteIndex < bytes.count else { overrun = true; return 0 }
            current = bytes[byteIndex]
            zeros = current == 0 ? zeros + 1 : 0
            bitIndex = 0
        }
        let b = (current >> (7 - UInt8(bitIndex))) & 1
        bitIndex += 1
        return UInt32(b)
    }

    mutating func unsignedExpGolomb() -> UInt32 {
        var leadingZeros = 0
        while bit() == 0 {
            leadingZeros += 1
            if leadingZeros > 31 || overrun { overrun = true; return 0 }
        }
        var value: UInt32 = 0
        for _ in 0..<leadingZeros { value = (value << 1) | bit() }
        return (UInt32(1) << UInt32(leadingZeros)) - 1 + value
    }
}
