import BroadcastCore

/// The Opus identification header (RFC 7845 §5.1), sent as the Enhanced RTMP SequenceStart.
enum OpusHead {
    /// Size with channel mapping family 0 (no mapping table).
    static let byteCount = 19

    /// Writes an OpusHead for mapping family 0 into `out` (at least 19 bytes).
    /// - Parameters:
    ///   - preSkip: samples at 48 kHz the decoder discards from the start (the encoder lookahead).
    ///   - inputSampleRate: informational original rate.
    ///   - outputGainQ8: gain in dB, Q7.8; 0 leaves the output as decoded.
    static func write(channels: Int, preSkip: Int, inputSampleRate: Int, outputGainQ8: Int16 = 0,
                             into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count >= byteCount && (1...2).contains(channels) && (0...0xFFFF).contains(preSkip))
        let magic: StaticString = "OpusHead"
        magic.withUTF8Buffer { m in for i in 0..<8 { out[i] = m[i] } }
        out[8] = 1                                   // version
        out[9] = UInt8(channels)
        out[10] = UInt8(preSkip & 0xFF)              // little-endian fields throughout
        out[11] = UInt8(preSkip >> 8)
        let rate = UInt32(truncatingIfNeeded: inputSampleRate)
        for i in 0..<4 { out[12 + i] = UInt8(truncatingIfNeeded: rate >> (8 * UInt32(i))) }
        let gain = UInt16(bitPattern: outputGainQ8)
        out[16] = UInt8(gain & 0xFF)
        out[17] = UInt8(gain >> 8)
        out[18] = 0                                  // channel mapping family 0: mono/stereo, no table
    }
}
