import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// CRC-32/MPEG-2 (ISO/IEC 13818-1 Annex A): polynomial 0x04C11DB7, MSB first, initial value
/// 0xFFFFFFFF, no final XOR. It ends every PSI section (PAT, PMT).
enum TSCRC32 {
    private static let table: [UInt32] = (0..<256).map { i in
        var c = UInt32(i) << 24
        for _ in 0..<8 { c = c & 0x8000_0000 != 0 ? (c << 1) ^ 0x04C1_1DB7 : c << 1 }
        return c
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in bytes { crc = (crc << 8) ^ t[Int((crc >> 24) ^ UInt32(b))] }
        }
        return crc
    }
}
