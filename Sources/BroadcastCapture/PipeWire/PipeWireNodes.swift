import CPipeWireShim

/// One node of the PipeWire graph, as the registry lists it.
struct PipeWireNode: Sendable, Equatable {
    var id: UInt32
    var name: String
    var mediaClass: String
    var description: String

    var isVideoSource: Bool { mediaClass == "Video/Source" || mediaClass == "Video/Source/Virtual" }
    var isAudioSink: Bool { mediaClass == "Audio/Sink" || mediaClass == "Audio/Duplex" }
    var isAudioSource: Bool { mediaClass == "Audio/Source" || mediaClass == "Audio/Source/Virtual" || mediaClass == "Audio/Duplex" }
}

/// Registry snapshots and name/id resolution with user-facing errors.
enum PipeWireNodes {
    /// Connects to the daemon (or `remoteFD`) and lists its nodes.
    static func list(remoteFD: Int32 = -1) throws(CaptureError) -> [PipeWireNode] {
        final class Collector { var nodes: [PipeWireNode] = [] }
        let collector = Collector()
        var message = [CChar](repeating: 0, count: 512)
        let ctx = Unmanaged.passUnretained(collector).toOpaque()
        let result = bk_pw_list_nodes(remoteFD, { ctx, info in
            guard let ctx, let info else { return }
            let c = Unmanaged<Collector>.fromOpaque(ctx).takeUnretainedValue()
            let n = info.pointee
            c.nodes.append(PipeWireNode(
                id: n.id,
                name: n.name.map { String(cString: $0) } ?? "",
                mediaClass: n.media_class.map { String(cString: $0) } ?? "",
                description: n.description.map { String(cString: $0) } ?? ""))
        }, ctx, &message, message.count)
        withExtendedLifetime(collector) {}
        if result < 0 {
            throw CaptureError(.unavailable, cString(message))
        }
        return collector.nodes
    }

    /// Finds `spec` (a node.name or a numeric id) among the nodes that pass `filter`.
    /// Throws `.badInput` listing the candidates when it is not there.
    static func resolve(_ spec: String, in nodes: [PipeWireNode], kind: String, flag: String,
                        where filter: (PipeWireNode) -> Bool) throws(CaptureError) -> PipeWireNode {
        let candidates = nodes.filter(filter)
        if let id = UInt32(spec), let node = candidates.first(where: { $0.id == id }) { return node }
        if let node = candidates.first(where: { $0.name == spec }) { return node }
        let available = candidates.isEmpty ? "none"
            : candidates.map { "\($0.name) (id \($0.id))" }.joined(separator: ", ")
        throw CaptureError(.badInput, "no PipeWire \(kind) node '\(spec)' for \(flag); available: \(available)")
    }

    /// The listing printed by `--list-sources`.
    static func describe(_ nodes: [PipeWireNode]) -> String {
        func section(_ title: String, _ list: [PipeWireNode]) -> String {
            var text = title + "\n"
            if list.isEmpty { text += "  (none)\n" }
            for n in list {
                let id = String(n.id)
                text += "  " + id + String(repeating: " ", count: max(1, 6 - id.count)) + n.name
                if !n.description.isEmpty { text += "  \"" + n.description + "\"" }
                text += "  [" + n.mediaClass + "]\n"
            }
            return text
        }
        return section("Video sources (--screen-node NAME|ID):", nodes.filter(\.isVideoSource))
            + section("Audio sinks, captured through their monitor (--app-audio NODE):", nodes.filter(\.isAudioSink))
            + section("Audio sources (--mic NODE):", nodes.filter(\.isAudioSource))
    }

    static func cString(_ buffer: [CChar]) -> String {
        buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
