/// "Did you mean": the closest known name to a mistyped one, by Damerau-Levenshtein distance
/// (optimal string alignment: insert, delete, substitute, swap two neighbours, each costing 1).
package enum Suggestion {
    /// Edits between `a` and `b`, counted on Unicode scalars.
    package static func distance(_ a: String, _ b: String) -> Int {
        let s = Array(a.unicodeScalars), t = Array(b.unicodeScalars)
        if s.isEmpty { return t.count }
        if t.isEmpty { return s.count }
        // Three rows: the one before the previous is what a transposition looks back to.
        var before = [Int](repeating: 0, count: t.count + 1)
        var previous = Array(0...t.count)
        var current = [Int](repeating: 0, count: t.count + 1)
        for i in 1...s.count {
            current[0] = i
            for j in 1...t.count {
                let cost = s[i - 1] == t[j - 1] ? 0 : 1
                var d = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, s[i - 1] == t[j - 2], s[i - 2] == t[j - 1] {
                    d = min(d, before[j - 2] + 1)
                }
                current[j] = d
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[t.count]
    }

    /// The candidate closest to `name`, if it is close enough to be what was meant: at most a
    /// third of the name's length in edits (at least 1, at most 3), or a candidate that starts
    /// with `name` (an abbreviation). Ties go to the earlier candidate.
    package static func closest(to name: String, in candidates: [String]) -> String? {
        guard !name.isEmpty else { return nil }
        let limit = max(1, min(3, name.count / 3))
        var best: (String, Int)?
        for c in candidates {
            let d = distance(name, c)
            if d <= limit, best.map({ d < $0.1 }) ?? true { best = (c, d) }
        }
        if let best { return best.0 }
        // `--video` for `--video-bitrate`: a unique prefix is a good guess too.
        let prefixed = candidates.filter { $0.hasPrefix(name) && name.count >= 4 }
        return prefixed.count == 1 ? prefixed[0] : nil
    }
}
