/// The one JSON string escaper (RFC 8259), for the stats reports (`ReportBuffer`), the memory
/// plan's and the CLI's JSON (`quoted`) and the control socket (`FlatJSON.quote`): `"` and `\` escaped, `\n`, `\r`, `\t` by name, every other control
/// character as `\u00XX`, the rest as UTF-8. Emits bytes, so a caller writing into preallocated
/// memory allocates nothing.
package enum JSONString {
    /// Calls `emit` with each byte of `s` as a quoted JSON string.
    @inline(__always)
    package static func escape(_ s: String, _ emit: (UInt8) -> Void) {
        emit(34)
        for u in s.unicodeScalars {
            switch u.value {
            case 0x22: emit(92); emit(34)
            case 0x5C: emit(92); emit(92)
            case 0x0A: emit(92); emit(110)
            case 0x0D: emit(92); emit(114)
            case 0x09: emit(92); emit(116)
            case 0..<0x20:
                emit(92); emit(117); emit(48); emit(48); emit(hexDigit(u.value >> 4)); emit(hexDigit(u.value & 15))
            default:
                for b in UTF8.encode(u)! { emit(b) }
            }
        }
        emit(34)
    }

    /// `s` as a JSON string literal, quotes included.
    package static func quoted(_ s: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        escape(s) { bytes.append($0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    @inline(__always)
    private static func hexDigit(_ v: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: v < 10 ? 48 + v : 87 + v) }
}
