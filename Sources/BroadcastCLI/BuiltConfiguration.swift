import BroadcastCapture
import BroadcastKit

/// What `ConfigurationBuilder` makes of the options: a session configuration, the capture
/// sources to start, and the notices to show the user.
package struct BuiltConfiguration {
    /// Ready for `BroadcastSession(configuration:)`.
    package var configuration: BroadcastConfiguration
    /// Made but not started.
    package var sources: [CaptureSource]
    /// Lines to print (without the `broadcast: ` prefix), already filtered by `--quiet`.
    package var notices: [String]

    /// The parts as built.
    package init(configuration: BroadcastConfiguration, sources: [CaptureSource], notices: [String]) {
        self.configuration = configuration
        self.sources = sources
        self.notices = notices
    }
}
