/// One request on the control socket, from a line of text: a JSON object
/// (`{"cmd":"save-replay","seconds":20,"path":"/tmp/a.mp4"}`) or words (`save-replay 20 /tmp/a.mp4`).
enum ControlCommand: Equatable {
    case saveReplay(seconds: Double?, path: String?)
    case stats
    case keyframe
    case setBitrate(kbps: Int)
    case stop
    case subscribe

    /// The command of `line`, or the one-line reason it is not one.
    static func parse(_ line: String) -> Result<ControlCommand, ControlError> {
        let fields: [String: String]
        let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
        if trimmed.hasPrefix("{") {
            guard let f = FlatJSON.parse(String(trimmed)) else { return .failure(ControlError("not a JSON object of strings and numbers")) }
            fields = f
        } else {
            let words = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard let first = words.first else { return .failure(ControlError("empty command")) }
            var f = ["cmd": first]
            switch first {
            case "save-replay":
                for w in words.dropFirst() {
                    if Double(w) != nil && f["seconds"] == nil { f["seconds"] = w } else { f["path"] = w }
                }
            case "set-bitrate":
                if words.count > 1 { f["kbps"] = words[1] }
            default:
                break
            }
            fields = f
        }
        guard let cmd = fields["cmd"] else { return .failure(ControlError("missing \"cmd\"")) }
        switch cmd {
        case "save-replay":
            var seconds: Double?
            if let s = fields["seconds"] {
                guard let v = Double(s), v.isFinite, v > 0 else { return .failure(ControlError("seconds must be a positive number, got '\(s)'")) }
                seconds = v
            }
            return .success(.saveReplay(seconds: seconds, path: fields["path"]))
        case "stats": return .success(.stats)
        case "keyframe": return .success(.keyframe)
        case "set-bitrate":
            guard let s = fields["kbps"], let k = Int(s), (100...50_000).contains(k) else {
                return .failure(ControlError("set-bitrate expects KBPS in 100...50000"))
            }
            return .success(.setBitrate(kbps: k))
        case "stop": return .success(.stop)
        case "subscribe": return .success(.subscribe)
        default:
            return .failure(ControlError("unknown command '\(cmd.prefix(40))' (save-replay, stats, keyframe, set-bitrate, stop, subscribe)"))
        }
    }
}

struct ControlError: Error, Equatable {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The smallest JSON reader the control socket needs: one flat object whose values are strings,
/// numbers, booleans or null (returned as their text). Anything else is nil.
enum FlatJSON {
    static func parse(_ text: String) -> [String: String]? {
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
        var fields: [String: String] = [:]
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
                fields[key] = v
            } else {
                var raw: [UInt8] = []
                while let c = it.first, c != 0x2C, c != 0x7D, c != 0x20 {
                    raw.append(c); it.removeFirst()
                }
                let v = String(decoding: raw, as: UTF8.self)
                guard !v.isEmpty, Double(v) != nil || v == "true" || v == "false" || v == "null" else { return nil }
                fields[key] = v
            }
            skip()
            guard let c = it.first else { return nil }
            it.removeFirst()
            if c == 0x7D { skip(); return it.isEmpty ? fields : nil }
            guard c == 0x2C else { return nil }
        }
    }

    /// `s` as a JSON string literal.
    static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
