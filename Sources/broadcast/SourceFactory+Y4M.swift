import BroadcastCapture
import BroadcastKit

extension SourceFactory {
    static func y4mSources(path: String, _ o: CommandLineOptions) throws -> Made {
        throw UsageError("y4m input is not available in this build")
    }
}
