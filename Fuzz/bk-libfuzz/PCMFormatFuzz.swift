import BroadcastCapture

/// A `--pcm-format` spec through PCMFormat(parsing:). Oracles: an accepted format is one of the
/// documented ones and round-trips through its description. (A refusal echoes the spec, which is
/// the user's own command-line argument, so a newline in it is theirs: no one-line oracle here.)
enum PCMFormatFuzz {
    static func run(_ data: UnsafeRawBufferPointer) {
        let text = String(decoding: data, as: UTF8.self)
        do {
            let f = try PCMFormat(parsing: text)
            guard [44_100, 48_000].contains(f.sampleRate), [1, 2].contains(f.channels), f.bytesPerFrame > 0 else {
                FuzzTarget.fail("pcm-format", "accepted \(text.debugDescription) as \(f)")
            }
            guard let again = try? PCMFormat(parsing: f.description), again == f else {
                FuzzTarget.fail("pcm-format", "\(f) does not round-trip through \(f.description.debugDescription)")
            }
        } catch {
            _ = "\(error)"
        }
    }
}
