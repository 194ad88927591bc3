import BroadcastCore


/// The largest resident growth measured across one kind of open (x264 of one configuration and
/// size, an audio encoder, the session's code) in this process, for session-scoped budgets.
///
/// A session measures what it adds as RSS growth. A second session in the same process opens
/// into pages the first one freed (malloc keeps them, the code is already resident) and would
/// measure close to nothing: each session opened and closed would make the next plan smaller,
/// and one host's plans would depend on its history. The honest cost of an open is the first
/// one's, so every session of the process plans with the largest figure seen.
package enum MeasuredOpenCost {
    private static let seen = Locked<[String: Int]>([:])

    /// `measured` (bytes, negative read as 0), or the larger figure measured for `kind` before.
    package static func charge(_ kind: String, measured: Int) -> Int {
        seen.withLock { table in
            let bytes = max(table[kind] ?? 0, max(0, measured))
            table[kind] = bytes
            return bytes
        }
    }

    /// The kind of an x264 open: its configuration and size. Rates and keyframe spacing are
    /// left out: they change no allocation made at open.
    package static func x264Kind(_ s: VideoEncoderSettings) -> String {
        var k = s
        k.bitrateKbps = 0
        k.maxBitrateKbps = 0
        k.vbvBufferKbits = 0
        k.keyframeIntervalSeconds = 0
        return "x264 \(k)"
    }
}
