
/// Keeps one repeated line from flooding a log (any local control client can ask for the same
/// refused request a thousand times a second). A line is said the first time; the same line
/// again within `windowNs` of when it was last said is only counted; the count is said with the
/// line when it comes again after the window, and by `flush()` at the end of the run.
///
/// Bounded: at most `maxLines` distinct lines are tracked; a new one beyond that flushes the
/// counts of all (said then) and starts over. Any thread.
package final class RepeatedLines: Sendable {
    private struct Entry {
        var saidNs: Int64
        var suppressed: Int
    }

    let windowNs: Int64
    static let maxLines = 64
    private let entries = Locked<[String: Entry]>([:])

    package init(windowNs: Int64 = 10_000_000_000) {
        self.windowNs = windowNs
    }

    /// The lines to print now for `line` said at `nowNs`: the line itself, or nothing while it
    /// repeats within the window.
    package func admit(_ line: String, nowNs: Int64 = MediaTime.now()) -> [String] {
        entries.withLock { map in
            if var e = map[line] {
                if nowNs - e.saidNs < windowNs {
                    e.suppressed += 1
                    map[line] = e
                    return []
                }
                let said = Self.withCount(line, e.suppressed, sinceNs: nowNs - e.saidNs)
                map[line] = Entry(saidNs: nowNs, suppressed: 0)
                return [said]
            }
            var out: [String] = []
            if map.count >= Self.maxLines {
                out = Self.counts(map)
                map.removeAll()
            }
            map[line] = Entry(saidNs: nowNs, suppressed: 0)
            out.append(line)
            return out
        }
    }

    /// The counts not said yet (one line per repeated line), and forgets them.
    package func flush() -> [String] {
        entries.withLock { map in
            let out = Self.counts(map)
            map.removeAll()
            return out
        }
    }

    private static func counts(_ map: [String: Entry]) -> [String] {
        map.filter { $0.value.suppressed > 0 }.sorted { $0.value.saidNs < $1.value.saidNs }
            .map { "\($0.key) (repeated \($0.value.suppressed) more time\($0.value.suppressed == 1 ? "" : "s"))" }
    }

    private static func withCount(_ line: String, _ suppressed: Int, sinceNs: Int64) -> String {
        guard suppressed > 0 else { return line }
        return "\(line) (and \(suppressed) more time\(suppressed == 1 ? "" : "s") in the last \(fixed(Double(sinceNs) / 1e9, 1)) s)"
    }
}
