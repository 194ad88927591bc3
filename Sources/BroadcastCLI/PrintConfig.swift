import BroadcastKit

/// `broadcast --print-config`: the merged settings as config-file lines, each with where its
/// value came from. The stream key is never printed, only whether and where it is set; a URL
/// shows its redacted form (a key in its path or query is hidden).
package enum PrintConfig {
    /// The text printed; `environment` is what `SettingsLoader` saw.
    package static func render(_ loaded: SettingsLoader.Loaded, environment: [String: String]) -> String {
        let o = loaded.options
        func env(_ n: String) -> String? { environment[n].flatMap { $0.isEmpty ? nil : $0 } }
        func origin(_ key: String) -> SettingOrigin { o.origins[key] ?? .default }
        var rows: [(String, String, SettingOrigin)] = []

        // Destinations: --url, else $BROADCAST_URL, else the service's ingest, else the local default.
        if !o.urls.isEmpty {
            for spec in o.urls {
                var v = redact(spec.url)
                if let k = spec.keyFile { v += ",key-file=\(k)" }
                if let s = spec.service { v += ",service=\(s.name)" }
                rows.append(("url", v, origin("url")))
            }
        } else if let u = env("BROADCAST_URL") {
            rows.append(("url", redact(u), .environment("BROADCAST_URL")))
        } else if let s = o.service {
            rows.append(("url", s.url, .service(s.name)))
        } else {
            rows.append(("url", ConfigurationBuilder.defaultURL, .default))
        }
        if let s = o.service { rows.append(("service", s.name, origin("service"))) }
        if o.keyFromArgv != nil {
            rows.append(("key", "(set, not shown)", origin("key")))
        } else if let f = o.keyFile {
            rows.append(("key-file", f, origin("key-file")))
        } else if env("STREAM_KEY") != nil {
            rows.append(("key", "(set, not shown)", .environment("STREAM_KEY")))
        } else {
            rows.append(("key", "(not set)", .default))
        }
        rows.append(("res", "\(o.resolution.width)x\(o.resolution.height)", origin("res")))
        rows.append(("fps", "\(o.fps)", origin("fps")))
        var video = o.videoKbps ?? o.resolution.defaultVideoKbps(fps: o.fps)
        var videoNote = o.videoKbps == nil ? " (from res and fps)" : ""
        for s in [o.service].compactMap({ $0 }) + o.urls.compactMap(\.service) where video > s.maxVideoKbps {
            video = s.maxVideoKbps
            videoNote = " (capped by \(s.name))"
        }
        rows.append(("video-bitrate", "\(video)\(videoNote)", origin("video-bitrate")))
        rows.append(("preset", o.preset, origin("preset")))
        rows.append(("audio-codec", o.audioCodec.rawValue, origin("audio-codec")))
        var audio = o.audioKbps ?? BroadcastLimits.defaultAudioBitrateKbps(o.audioCodec)
        var audioNote = o.audioKbps == nil ? " (the codec's default)" : ""
        for s in [o.service].compactMap({ $0 }) + o.urls.compactMap(\.service) where audio > s.maxAudioKbps {
            audio = s.maxAudioKbps
            audioNote = " (capped by \(s.name))"
        }
        rows.append(("audio-bitrate", "\(audio)\(audioNote)", origin("audio-bitrate")))
        rows.append(("source", o.givenText["source"]?.last ?? "auto", origin("source")))
        let shown: Set<String> = ["url", "service", "key", "key-file", "res", "fps", "video-bitrate", "preset",
                                  "audio-codec", "audio-bitrate", "source"]
        // Every other setting that was given, as given.
        for spec in OptionTable.all where spec.inConfig && !shown.contains(spec.key) {
            guard let text = o.givenText[spec.key], let from = o.origins[spec.key] else { continue }
            rows.append((spec.key, spec.takesValue ? (text.last ?? "") : "true", from))
        }

        var lines = ["# broadcast --print-config: command line > environment > config file"]
        if let p = loaded.configPath {
            lines.append("# config file: \(p)")
        } else {
            lines.append("# config file: none" + (loaded.lookedFor.map { " (\($0) not found)" } ?? ""))
        }
        let width = min(44, rows.map { $0.0.count + 3 + $0.1.count }.max() ?? 0)
        for (k, v, from) in rows {
            let left = "\(k) = \(v)"
            lines.append(left + String(repeating: " ", count: max(1, width + 2 - left.count)) + "# \(from)")
        }
        return lines.joined(separator: "\n")
    }

    /// A URL as it may be shown: the parser's redacted form, or a placeholder when it does not parse.
    static func redact(_ url: String) -> String {
        if WHIPURL.isWHIP(url) { return (try? WHIPURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)" }
        if SRTURL.isSRT(url) { return (try? SRTURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)" }
        return (try? RTMPURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)"
    }
}
