/// The three lanes of a broadcast, as in ReplayKit's `RPSampleBufferType`.
public enum SampleBufferType: Int, Sendable, CaseIterable {
    case video = 0
    case appAudio = 1
    case micAudio = 2
}
