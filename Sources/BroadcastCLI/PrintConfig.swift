import BroadcastKit

/// `broadcast --print-config`: the merged settings as config-file lines, each with where its
/// value came from. The stream key is never printed, only whether and where it is set; a URL
/// shows its redacted form (a key in its path or query is hidden).
package enum PrintConfig {
    /// The text printed; `environment` is what `SettingsLoader` saw.
    package static func render(_ loaded: SettingsLoader.Loaded, environment: [String: String]) -> Rendered {
        let o = loaded.options
        func env(_ n: String) -> String? { environment[n].flatMap { $0.isEmpty ? nil : $0 } }
        func origin(_ key: String) -> SettingOrigin { o.origins[key] ?? .default }
        var rows: [(String, String, SettingOrigin)] = []
        var problem: String?

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
        // The encoder settings as the run would build them (service caps included), one path.
        switch ConfigurationBuilder(environment: environment, cgroupLimit: nil).encoderSettingsResult(o) {
        case .success(let (video, audio, _)):
            func note(_ given: Int?, _ used: Int, _ auto: String) -> String {
                given == nil ? " (\(auto))" : (given != used ? " (capped by the service; \(given!) asked)" : "")
            }
            rows.append(("video-bitrate", "\(video.bitrateKbps)" + note(o.videoKbps, video.bitrateKbps, "from res and fps"),
                         origin("video-bitrate")))
            rows.append(("preset", o.preset, origin("preset")))
            rows.append(("audio-codec", audio.codec.rawValue, origin("audio-codec")))
            rows.append(("audio-bitrate", "\(audio.bitrateKbps)" + note(o.audioKbps, audio.bitrateKbps, "the codec's default"),
                         origin("audio-bitrate")))
        case .failure(let e):
            problem = e.message
        }
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
        if let problem { lines.append("# these settings are refused: \(problem)") }
        return Rendered(text: lines.joined(separator: "\n"), refused: problem != nil)
    }

    /// The text, and whether a run with these settings would be refused (then exit 2).
    package struct Rendered {
        package var text: String
        package var refused: Bool
    }

    /// A URL as it may be shown: the parser's redacted form, or a placeholder when it does not parse.
    static func redact(_ url: String) -> String {
        if WHIPURL.isWHIP(url) { return (try? WHIPURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)" }
        if SRTURL.isSRT(url) { return (try? SRTURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)" }
        return (try? RTMPURL(parsing: url))?.redacted ?? "(a URL that does not parse; not shown)"
    }
}
