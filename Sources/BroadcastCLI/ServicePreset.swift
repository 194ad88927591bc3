/// Ingest URLs and the limits each service publishes for RTMP contribution; docs/services.md
/// gives the page each number comes from.
package struct ServicePreset: Sendable {
    /// One row of a service's bitrate table: up to this height and frame rate, at most this bitrate.
    package struct Tier: Sendable, Equatable {
        package let maxHeight: Int
        package let maxFPS: Int
        package let maxVideoKbps: Int
    }

    /// The `--service` name.
    package let name: String
    /// Default ingest base URL.
    package let url: String
    /// The published video limits, smallest first: a stream takes the first tier that holds
    /// its height and frame rate; its bitrate above that tier's is capped; a size or rate above
    /// the last tier is refused.
    package let tiers: [Tier]
    /// The published audio bitrate limit (AAC); above it is capped.
    package let maxAudioKbps: Int
    /// Keyframe interval the service asks for.
    package let keyframeSeconds: Int

    /// The tallest picture the service takes.
    package var maxHeight: Int { tiers.map(\.maxHeight).max() ?? 0 }
    /// The highest frame rate the service takes.
    package var maxFPS: Int { tiers.map(\.maxFPS).max() ?? 0 }

    /// The video bitrate limit for a stream `height` pixels tall at `fps`; nil when no tier holds it.
    package func maxVideoKbps(height: Int, fps: Int) -> Int? {
        tiers.first { height <= $0.maxHeight && fps <= $0.maxFPS }?.maxVideoKbps
    }

    /// Every supported service (sources: docs/services.md).
    package static let all: [ServicePreset] = [
        // Twitch Broadcasting Guidelines: up to 1080p60 at 6000 kbps; AAC up to 320 kbps
        // (Creator Camp "Broadcast Recommendations"); 2 s keyframes.
        ServicePreset(name: "twitch", url: "rtmp://live.twitch.tv/app",
                      tiers: [Tier(maxHeight: 1080, maxFPS: 60, maxVideoKbps: 6000)],
                      maxAudioKbps: 320, keyframeSeconds: 2),
        // YouTube "Choose live encoder settings, bitrates, and resolutions": the maximum
        // bitrate setting by resolution and frame rate, up to 2160p60; AAC 128 kbps stereo; 2 s keyframes.
        ServicePreset(name: "youtube", url: "rtmp://a.rtmp.youtube.com/live2",
                      tiers: [Tier(maxHeight: 720, maxFPS: 30, maxVideoKbps: 8000),
                              Tier(maxHeight: 720, maxFPS: 60, maxVideoKbps: 8000),
                              Tier(maxHeight: 1080, maxFPS: 30, maxVideoKbps: 8000),
                              Tier(maxHeight: 1080, maxFPS: 60, maxVideoKbps: 10_000),
                              Tier(maxHeight: 1440, maxFPS: 30, maxVideoKbps: 25_000),
                              Tier(maxHeight: 1440, maxFPS: 60, maxVideoKbps: 30_000),
                              Tier(maxHeight: 2160, maxFPS: 30, maxVideoKbps: 35_000),
                              Tier(maxHeight: 2160, maxFPS: 60, maxVideoKbps: 40_000)],
                      maxAudioKbps: 128, keyframeSeconds: 2),
        // Facebook Live Video API reference ("Recommended Settings"): RTMPS, the top of each
        // resolution's bitrate range up to 1080p60 at 9000 kbps; AAC up to 256 kbps; 2 s keyframes.
        ServicePreset(name: "facebook", url: "rtmps://live-api-s.facebook.com:443/rtmp",
                      tiers: [Tier(maxHeight: 360, maxFPS: 30, maxVideoKbps: 1000),
                              Tier(maxHeight: 480, maxFPS: 30, maxVideoKbps: 2000),
                              Tier(maxHeight: 720, maxFPS: 30, maxVideoKbps: 4000),
                              Tier(maxHeight: 720, maxFPS: 60, maxVideoKbps: 6000),
                              Tier(maxHeight: 1080, maxFPS: 30, maxVideoKbps: 6000),
                              Tier(maxHeight: 1080, maxFPS: 60, maxVideoKbps: 9000)],
                      maxAudioKbps: 256, keyframeSeconds: 2),
        // Kick ingests through Amazon IVS (the global-contribute.live-video.net host): IVS's
        // streaming configuration allows up to 1080p60 at 8500 kbps and AAC at 160 kbps, 2 s
        // keyframes. The ingest host is per-account; override it with --url.
        ServicePreset(name: "kick", url: "rtmps://fa723fc1b171.global-contribute.live-video.net/app",
                      tiers: [Tier(maxHeight: 1080, maxFPS: 60, maxVideoKbps: 8500)],
                      maxAudioKbps: 160, keyframeSeconds: 2),
    ]

    /// The preset called `s` (any case); throws `UsageError` otherwise.
    package static func named(_ s: String) throws -> ServicePreset {
        guard let p = all.first(where: { $0.name == s.lowercased() }) else {
            let near = Suggestion.closest(to: s.lowercased(), in: all.map(\.name)).map { "; did you mean \($0)?" } ?? ""
            throw UsageError("--service expects one of \(all.map { $0.name }.joined(separator: ", ")), got '\(s)'\(near)")
        }
        return p
    }
}
