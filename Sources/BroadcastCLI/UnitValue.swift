/// Bitrates and sizes as ffmpeg users type them: `2500`, `2500k`, `2.5M`; `50M`, `512K`, `1G`, `52428800`.
package enum UnitValue {
    /// A bitrate in kbit/s: a plain number is kbps; `k` is kbps, `M` Mbps, `G` Gbps (decimal, like
    /// ffmpeg's `-b:v`); `bps`/`b` may follow a unit letter (`2500kbps`). Rounded to whole kbps;
    /// nil if malformed.
    package static func kbps(_ text: String) -> Int? {
        var body = Substring(text)
        // "2500bps" is refused rather than read as 2500 kbps: a bare number is kbps.
        for tail in ["bps", "b"] where body.lowercased().hasSuffix(tail) {
            let unit = body.dropLast(tail.count).last.map { "kKmMgG".contains($0) } ?? false
            if unit { body = body.dropLast(tail.count) }
            break
        }
        var scale = 1.0
        switch body.last {
        case "k", "K": scale = 1; body = body.dropLast()
        case "m", "M": scale = 1_000; body = body.dropLast()
        case "g", "G": scale = 1_000_000; body = body.dropLast()
        default: break
        }
        guard let n = decimal(body) else { return nil }
        let kbps = (n * scale).rounded()
        guard kbps <= 1e12 else { return nil }
        return Int(kbps)
    }

    /// A size in bytes: plain bytes, or `K`/`M`/`G`/`T` (binary, 1024-based; `KB`, `MiB`, … too).
    /// Whole bytes only for plain numbers; nil if malformed or beyond 1 TiB.
    package static func bytes(_ text: String) -> Int? {
        var body = Substring(text)
        let upper = text.uppercased()
        for tail in ["IB", "B"] where upper.hasSuffix(tail) && body.count > tail.count {
            // "B" alone after a digit means bytes; after a unit letter it is decoration (MB, MiB).
            body = body.dropLast(tail.count)
            break
        }
        var shift = 0
        switch body.last.map({ Character($0.uppercased()) }) {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        case "T": shift = 40
        default:
            // "IB" without a unit letter ("5iB") is malformed; a bare "B" ("512B") is bytes.
            if upper.hasSuffix("IB") { return nil }
        }
        if shift > 0 { body = body.dropLast() }
        guard let n = decimal(body) else { return nil }
        if shift == 0 && n != n.rounded(.down) { return nil }
        let bytes = n * Double(1 << shift)
        guard bytes <= Double(1 << 40) else { return nil }
        return Int(bytes)
    }

    /// Strict non-negative decimal: digits with at most one '.', no sign, exponent, inf or nan
    /// (all of which `Double(_:)` would accept).
    static func decimal(_ s: Substring) -> Double? {
        var digits = 0, dots = 0
        for c in s {
            if c == "." { dots += 1 } else if c.isASCII && c.isNumber { digits += 1 } else { return nil }
        }
        guard digits > 0, dots <= 1 else { return nil }
        return Double(s)
    }
}
