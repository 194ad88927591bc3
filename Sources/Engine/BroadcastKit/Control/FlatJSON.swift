import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// The smallest JSON reader the control socket needs: one flat object whose values are strings,
/// numbers, booleans or null (returned as their text). Anything else is an error, and so is a key
/// given twice (JSON leaves duplicates undefined; taking the last one let
/// `{"cmd":"stats","cmd":"stop"}` stop a stream that a reader of the first key saw as harmless).
package enum FlatJSON {
    /// A value's text and whether it was a JSON string.
    struct Field: Equatable, Sendable {
        let value: String
        let quoted: Bool
    }

    /// The object's fields as text; nil for anything else (a duplicate key included).
    package static func parse(_ text: String) -> [String: String]? {
        guard case .success(let f) = fields(text) else { return nil }
        return f.mapValues(\.value)
    }

    /// The object's fields, or why `text` is not one flat object with distinct keys.
    static func fields(_ text: String) -> Result<[String: Field], ControlError> {
        guard let parsed = read(text) else { return .failure(ControlError("not a JSON object of strings and numbers")) }
        var out: [String: Field] = [:]
        for (key, field) in parsed {
            guard out.updateValue(field, forKey: key) == nil else {
                return .failure(ControlError("duplicate key \(quote(String(key.prefix(40)))) in the request"))
            }
        }
        return .success(out)
    }

    private static func read(_ text: String) -> [(String, Field)]? {
        var it = Array(text.utf8)[...]
        func skip() { while let c = it.first, c == 0x20 || c == 0x09 || c == 0x0D || c == 0x0A { it.removeFirst() } }
        func string() -> String? {
            guard it.first == 0x22 else { return nil }
            it.removeFirst()
            var out: [UInt8] = []
            while let c = it.first {
                it.removeFirst()
                if c == 0x22 { return String(decoding: out, as: UTF8.self) }
                if c == 0x5C {
                    guard let e = it.first else { return nil }
                    it.removeFirst()
                    switch e {
                    case 0x6E: out.append(0x0A)
                    case 0x74: out.append(0x09)
                    case 0x22, 0x5C, 0x2F: out.append(e)
                    default: return nil
                    }
                } else {
                    out.append(c)
                }
            }
            return nil
        }
        skip()
        guard it.first == 0x7B else { return nil }
        it.removeFirst()
        var fields: [(String, Field)] = []
        skip()
        if it.first == 0x7D { it.removeFirst(); skip(); return it.isEmpty ? fields : nil }
        while true {
            skip()
            guard let key = string() else { return nil }
            skip()
            guard it.first == 0x3A else { return nil }
            it.removeFirst()
            skip()
            if it.first == 0x22 {
                guard let v = string() else { return nil }
                fields.append((key, Field(value: v, quoted: true)))
            } else {
                var raw: [UInt8] = []
                while let c = it.first, c != 0x2C, c != 0x7D, c != 0x20 {
                    raw.append(c); it.removeFirst()
                }
                let v = String(decoding: raw, as: UTF8.self)
                guard !v.isEmpty, Double(v) != nil || v == "true" || v == "false" || v == "null" else { return nil }
                fields.append((key, Field(value: v, quoted: false)))
            }
            skip()
            guard let c = it.first else { return nil }
            it.removeFirst()
            if c == 0x7D { skip(); return it.isEmpty ? fields : nil }
            guard c == 0x2C else { return nil }
        }
    }

    /// `s` as a JSON string literal (`JSONString`).
    package static func quote(_ s: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count + 2)
        JSONString.escape(s) { bytes.append($0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
