/// Puts a live source's pictures on the output frame grid before they are converted: each output
/// tick takes at most one picture, and the picture is stamped with its tick.
///
/// A source faster than the output rate (a 60 Hz desktop under `--fps 30`, mutter's damage-driven
/// ScreenCast while the pointer moves, 60 fps Y4M), or one whose pictures come at irregular times
/// (mutter on a loaded machine: 17, 25, 37, 53 ms apart), would otherwise reach the stream at its
/// own times, and the stream would carry more pictures than the rate it declares. Here a picture
/// takes the tick nearest its PTS; when an earlier picture already holds that tick, it is skipped:
/// neither converted nor encoded, counted as `videoFramesSkipped`. The first picture after the
/// lane repeated the last one (a still spell) is never skipped: it takes the next free tick, so a
/// damage-driven change always reaches the stream.
///
/// The grid is anchored on the first picture and pulled gently (`phaseGain`) toward the admitted
/// pictures that are close to their tick, so a source a few hundred ppm off the output rate (29.97 or 30.03 Hz) stays centred
/// on its ticks and never slips one. A jump of more than `maxBridgeNs` (or backwards) restarts the
/// grid on the picture.
///
/// Pure and allocation-free: the video lane keeps one under its convert lock.
struct FrameRateGate: Sendable {
    /// The output frame period in ns.
    let periodNs: Double
    /// Fraction of an admitted picture's distance from its tick by which the grid moves to it.
    var phaseGain = 0.05
    /// Only pictures within this fraction of a period of their tick pull the grid.
    var pullZoneFraction = 0.25
    /// Longest distance from the last tick bridged on the grid; further, the grid restarts.
    var maxBridgeNs: Double = 60e9

    private var anchored = false
    /// The last tick taken (by a picture or a repeat), on the source clock, in ns.
    private var lastTickNs: Double = 0
    /// True when the last tick was taken by a repeat of the last picture, not by a new one.
    private var lastWasRepeat = false

    /// - Parameter fps: the output frame rate.
    init(fps: Int) {
        periodNs = 1e9 / Double(max(1, fps))
    }

    /// Where a picture would go: its tick, and the grid once it is taken.
    struct Placement: Sendable {
        /// The tick the picture is stamped with, on the source clock, in ns.
        let tickNs: Int64
        /// Ticks after its nearest one (1 when a repeat held that tick, else 0).
        let pushedTicks: Int
        fileprivate let nextLastTickNs: Double
    }

    /// The placement of a picture captured at `pts` (ns, the source clock), or nil when an
    /// earlier picture already holds its tick: skip it (count it, do not convert or encode it).
    /// Nothing changes until `take` (a picture the lane then drops for lack of a slot keeps no tick).
    func place(_ pts: Int64) -> Placement? {
        let t = Double(pts)
        guard anchored, abs(t - lastTickNs) <= maxBridgeNs else {
            // The first picture, or a jump: the grid starts here.
            return Placement(tickNs: pts, pushedTicks: 0, nextLastTickNs: t)
        }
        // Ticks from the last one to the nearest tick of this picture (negative: before it).
        let nearest = ((t - lastTickNs) / periodNs).rounded()
        var ticks = nearest
        if ticks < 1 {
            // Its tick is taken. By a picture: skip this one. By a repeat: this picture is new
            // content after a still spell, so it takes the next tick.
            guard lastWasRepeat else { return nil }
            ticks = 1
        }
        let tick = lastTickNs + ticks * periodNs
        // Out of Int64's range (a hostile or wrapped clock): the grid starts on the picture.
        guard abs(tick) < 9.2e18 else { return Placement(tickNs: pts, pushedTicks: 0, nextLastTickNs: t) }
        // Pull the grid toward a picture close to its tick, so the grid's phase follows a source
        // slightly off the output rate. Not toward one half a period off: of a 60 Hz source's two
        // pictures a tick, whichever comes first would pull the grid earlier every time.
        let offset = t - tick
        let next = abs(offset) <= periodNs * pullZoneFraction ? tick + phaseGain * offset : tick
        return Placement(tickNs: Int64(tick.rounded()), pushedTicks: Int(min(2, ticks - nearest)), nextLastTickNs: next)
    }

    /// The picture placed at `placement` is being encoded: its tick is taken.
    mutating func take(_ placement: Placement) {
        anchored = true
        lastTickNs = placement.nextLastTickNs
        lastWasRepeat = false
    }

    /// `place` and `take` in one: the tick, or nil to skip.
    mutating func stamp(_ pts: Int64) -> Int64? {
        guard let p = place(pts) else { return nil }
        take(p)
        return p.tickNs
    }

    /// The lane encoded the last picture again at `pts` (a still spell): that tick is taken.
    mutating func noteRepeat(at pts: Int64) {
        guard anchored else { return }
        let t = Double(pts)
        guard abs(t - lastTickNs) <= maxBridgeNs else { return }
        let ticks = ((t - lastTickNs) / periodNs).rounded()
        if ticks >= 1 {
            lastTickNs += ticks * periodNs
        }
        lastWasRepeat = true
    }
}
