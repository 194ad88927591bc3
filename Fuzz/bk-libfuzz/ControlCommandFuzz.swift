// ControlCommand lives in BroadcastCLI today and moves to BroadcastKit (package) with the embedding
// work: importing both finds it either way.
import BroadcastKit
@testable import BroadcastCLI

/// One control-socket line through ControlCommand.parse. Oracle: every accepted command,
/// written back as a JSON object, parses to the same command (so the JSON and word forms agree
/// with what the reader understood), and a refusal's answer line (the message JSON-quoted, as
/// ControlSocket sends it) stays one line.
enum ControlCommandFuzz {
    static func run(_ data: UnsafeRawBufferPointer) {
        // ControlSocket hands over one line: the bytes before the first newline.
        let end = data.firstIndex(of: 0x0A) ?? data.count
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: data[..<end]), as: UTF8.self)
        switch ControlCommand.parse(line) {
        case .success(let command):
            guard let json = encode(command) else { return }
            guard case .success(let again) = ControlCommand.parse(json), again == command else {
                FuzzTarget.fail("control-command", "\(line.debugDescription) gave \(command), but its JSON \(json.debugDescription) does not parse back to it")
            }
        case .failure(let error):
            let answer = FlatJSON.quote(error.message)
            if answer.contains(where: { $0 == "\n" || $0 == "\r" }) {
                FuzzTarget.fail("control-command", "the refusal of \(line.debugDescription) is not one line: \(answer.debugDescription)")
            }
        }
    }

    /// JSON with only the escapes FlatJSON reads (\" \\ \n \t; other bytes raw).
    static func string(_ s: String) -> String {
        var out = "\""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default: out.unicodeScalars.append(c)
            }
        }
        return out + "\""
    }

    /// Commands without arguments, by name (a new one is found by its name; unknown ones are skipped).
    static let plainNames = ["stats", "keyframe", "stop", "subscribe", "version"]

    /// The command as a JSON object; nil for a command this harness does not know how to write.
    static func encode(_ command: ControlCommand) -> String? {
        if case .saveReplay(let seconds, let path) = command {
            var fields = [#""cmd":"save-replay""#]
            if let seconds { fields.append(#""seconds":"# + "\(seconds)") }
            if let path { fields.append(#""path":"# + string(path)) }
            return "{" + fields.joined(separator: ",") + "}"
        }
        if case .setBitrate(let kbps) = command { return #"{"cmd":"set-bitrate","kbps":"# + "\(kbps)}" }
        for name in plainNames {
            let json = #"{"cmd":""# + name + #""}"#
            if case .success(let c) = ControlCommand.parse(json), c == command { return json }
        }
        return nil
    }
}
