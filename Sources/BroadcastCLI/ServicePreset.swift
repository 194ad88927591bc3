/// Ingest URLs and the limits each service documents for RTMP contribution.
package struct ServicePreset: Sendable {
    /// The `--service` name.
    package let name: String
    /// Default ingest base URL.
    package let url: String
    /// Limits the service documents; bitrates above are capped, sizes and rates above refused.
    package let maxVideoKbps: Int
    package let maxAudioKbps: Int
    package let maxHeight: Int
    package let maxFPS: Int
    /// Keyframe interval the service asks for.
    package let keyframeSeconds: Int

    /// Every supported service.
    package static let all: [ServicePreset] = [
        // Twitch: up to 6000 kbps video, AAC up to 160 kbps, 2 s keyframes, up to 1080p60.
        ServicePreset(name: "twitch", url: "rtmp://live.twitch.tv/app", maxVideoKbps: 6000, maxAudioKbps: 160,
                      maxHeight: 1080, maxFPS: 60, keyframeSeconds: 2),
        // YouTube: 1080p30 up to 6000 kbps (higher for 1440p+), AAC 128 kbps, 2 s keyframes.
        ServicePreset(name: "youtube", url: "rtmp://a.rtmp.youtube.com/live2", maxVideoKbps: 6000, maxAudioKbps: 128,
                      maxHeight: 1080, maxFPS: 60, keyframeSeconds: 2),
        // Facebook Live: RTMPS only, up to 6000 kbps, AAC 128 kbps 48 kHz, 2 s keyframes, 1080p.
        ServicePreset(name: "facebook", url: "rtmps://live-api-s.facebook.com:443/rtmp", maxVideoKbps: 6000,
                      maxAudioKbps: 128, maxHeight: 1080, maxFPS: 30, keyframeSeconds: 2),
        // Kick: RTMPS ingest, up to 8000 kbps, 2 s keyframes, 1080p60. The ingest host is per-account;
        // the preset is the documented global endpoint, override it with --url.
        ServicePreset(name: "kick", url: "rtmps://fa723fc1b171.global-contribute.live-video.net/app", maxVideoKbps: 8000,
                      maxAudioKbps: 160, maxHeight: 1080, maxFPS: 60, keyframeSeconds: 2),
    ]

    /// The preset called `s` (any case); throws `UsageError` otherwise.
    package static func named(_ s: String) throws -> ServicePreset {
        guard let p = all.first(where: { $0.name == s.lowercased() }) else {
            throw UsageError("--service expects one of \(all.map { $0.name }.joined(separator: ", ")), got '\(s)'")
        }
        return p
    }
}
