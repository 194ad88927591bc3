import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording

/// One request on the control socket, from a line of text: a JSON object
/// (`{"cmd":"save-replay","seconds":20,"path":"/tmp/a.mp4","id":7}`) or words (`save-replay 20 /tmp/a.mp4`).
/// The protocol is `docs/control-protocol.md` (version `ControlServer.protocolVersion`).
package enum ControlCommand: Equatable, Sendable {
    case saveReplay(seconds: Double?, path: String?)
    case stats
    case keyframe
    case setBitrate(kbps: Int)
    case stop
    case subscribe
    case version

    /// The command of `line`, or the one-line reason it is not one.
    package static func parse(_ line: String) -> Result<ControlCommand, ControlError> {
        parseRequest(line).map(\.command)
    }

    /// The command of `line` with the request's `id` (a JSON object's "id": a string or a number,
    /// echoed in the answer as given), or the reason it is not one (with the id when it was readable,
    /// so the error answer can carry it too).
    package static func parseRequest(_ line: String) -> Result<ControlRequest, ControlError> {
        let fields: [String: String]
        var id: String?
        let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
        if trimmed.hasPrefix("{") {
            let parsed: [String: FlatJSON.Field]
            switch FlatJSON.fields(String(trimmed)) {
            case .success(let f): parsed = f
            case .failure(let e): return .failure(e)
            }
            if let raw = parsed["id"] {
                guard raw.quoted ? raw.value.utf8.count <= ControlRequest.maxIDBytes
                                 : (Int64(raw.value) != nil) else {
                    return .failure(ControlError("\"id\" must be a string of at most \(ControlRequest.maxIDBytes) bytes or an integer"))
                }
                id = raw.quoted ? FlatJSON.quote(raw.value) : raw.value
            }
            fields = parsed.mapValues(\.value)
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
        guard let cmd = fields["cmd"] else { return .failure(ControlError("missing \"cmd\"", id: id)) }
        return command(cmd, fields).map { ControlRequest(command: $0, id: id) }.mapError { ControlError($0.message, id: id) }
    }

    private static func command(_ cmd: String, _ fields: [String: String]) -> Result<ControlCommand, ControlError> {
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
            let range = BroadcastLimits.videoBitrateKbps
            guard let s = fields["kbps"], let k = Int(s), range.contains(k) else {
                return .failure(ControlError("set-bitrate expects KBPS in \(BroadcastLimits.text(range))"))
            }
            return .success(.setBitrate(kbps: k))
        case "stop": return .success(.stop)
        case "subscribe": return .success(.subscribe)
        case "version": return .success(.version)
        default:
            return .failure(ControlError("unknown command '\(cmd.prefix(40))' (save-replay, stats, keyframe, set-bitrate, "
                                         + "stop, subscribe, version)"))
        }
    }
}

/// A parsed request: the command and the request's id as JSON text (quoted when it was a string).
package struct ControlRequest: Equatable, Sendable {
    /// Longest id echoed back.
    package static let maxIDBytes = 128
    let command: ControlCommand
    let id: String?
    package init(command: ControlCommand, id: String?) { self.command = command; self.id = id }
}

package struct ControlError: Error, Equatable {
    package let message: String
    /// The request's id, when it could be read.
    package let id: String?
    init(_ message: String, id: String? = nil) { self.message = message; self.id = id }
}

