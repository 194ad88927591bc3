import BroadcastKit
/// Output resolution from `--res`: a named preset or WxH.
package struct Resolution: Equatable, Sendable {
    /// Pixels, even.
    package var width: Int
    /// Pixels, even.
    package var height: Int

    /// The named sizes `--res` accepts.
    package static let presets: [(String, Resolution)] = [
        ("360p", Resolution(width: 640, height: 360)),
        ("480p", Resolution(width: 854, height: 480)),
        ("720p", Resolution(width: 1280, height: 720)),
        ("1080p", Resolution(width: 1920, height: 1080)),
    ]

    /// A size as given; `init(parsing:)` validates.
    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `720p` or `WxH`; throws `UsageError` for other text or odd/out-of-range sizes.
    package init(parsing s: String) throws {
        if let p = Resolution.presets.first(where: { $0.0 == s.lowercased() }) {
            self = p.1
            return
        }
        let parts = s.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else {
            throw UsageError("--res expects 360p, 480p, 720p, 1080p or WxH, got '\(s)'")
        }
        let lw = BroadcastLimits.width, lh = BroadcastLimits.height
        guard lw.contains(w), lh.contains(h), w % 2 == 0, h % 2 == 0 else {
            throw UsageError("--res \(s): width and height must be even, \(BroadcastLimits.text(lw)) x \(BroadcastLimits.text(lh))")
        }
        self.init(width: w, height: h)
    }

    /// A bitrate that suits the size at 30 fps (x1.5 at 60 fps), in kbit/s.
    package func defaultVideoKbps(fps: Int) -> Int {
        BroadcastLimits.defaultVideoBitrateKbps(width: width, height: height, fps: fps)
    }
}
