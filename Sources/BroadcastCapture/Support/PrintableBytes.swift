/// Bytes from an input file shown in a message: printable ASCII as is, anything else (NUL,
/// ESC and other control bytes, bytes of 0x7F and up) as `\xNN`, cut at `limit` bytes with "...".
/// A hostile header then cannot write raw control bytes to the user's terminal or log.
enum PrintableBytes {
    static func escape<S: Sequence>(_ bytes: S, limit: Int = 32) -> String where S.Element == UInt8 {
        var out = ""
        var n = 0
        for b in bytes {
            if n == limit { out += "..."; break }
            n += 1
            if b >= 0x20 && b < 0x7F && b != UInt8(ascii: "\\") {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let hex = String(b, radix: 16)
                out += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
