/// When the test source turns its frame between WxH and HxW, as a phone rotated every
/// `seconds` would. Frame n belongs to phase floor(n / (seconds * fps)); odd phases are
/// rotated. Integer arithmetic on milliseconds, so the switch lands on the same frame on
/// every run.
struct RotationSchedule: Sendable, Equatable {
    /// Length of one phase in ms (nil = never rotate).
    let periodMs: Int64?
    let fps: Int64

    init(everySeconds: Double?, fps: Int) {
        periodMs = everySeconds.map { max(1, Int64(($0 * 1000).rounded())) }
        self.fps = Int64(fps)
    }

    /// True when frame `index` is drawn in the rotated (HxW) orientation.
    func isRotated(frame index: Int64) -> Bool {
        guard let periodMs else { return false }
        // Phase = floor(index * 1000 / fps / periodMs), without overflow for any sane run.
        return (index * 1000 / (fps * periodMs)) % 2 == 1
    }
}
