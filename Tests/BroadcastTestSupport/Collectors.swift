import BroadcastPipeline

/// What an `AudioMixer`'s output callback saw: each frame's position, first sample and peak.
package final class MixCollector: @unchecked Sendable {
    package var positions: [Int64] = []
    package var firstSample: [Float] = []
    package var peak: [Float] = []

    package init() {}
}

/// The packets an interleaver released, by track and timestamp, in order.
package final class TagLog: @unchecked Sendable {
    package var tags: [(TrackKind, UInt32)] = []

    package init() {}
}
