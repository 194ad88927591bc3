/// What to capture from PipeWire; maps one-to-one onto the CLI flags
/// `--screen-node`, `--app-audio`, `--mic`, `--no-app-audio`, `--no-mic`, `--cursor`.
public struct PipeWireOptions: Sendable, Equatable {
    /// How the portal should draw the pointer (portal path only; a plain node shows what it shows).
    public enum Cursor: String, Sendable { case embedded, hidden }

    /// Capture video at all.
    public var screen: Bool
    /// A Video/Source node by `node.name` or numeric id; nil picks the first Video/Source node.
    public var screenNode: String?
    /// Capture desktop audio (a sink's monitor).
    public var appAudio: Bool
    /// The Audio/Sink whose monitor is captured; nil means the default sink.
    public var appAudioNode: String?
    /// Capture the microphone.
    public var mic: Bool
    /// The Audio/Source to capture; nil means the default source.
    public var micNode: String?
    public var cursor: Cursor
    /// Buffers preferred per video stream (2). A producer that insists on more gets them: frames
    /// are read in stripes whose pages are released, so the count does not change what stays
    /// resident (`PipeWireScreenSource.plannedResidentBytes`).
    public var videoBufferCount: Int
    /// The output size: asked of a producer that can scale (the smallest size that covers the
    /// output). nil asks for 1280x720. A producer with a fixed size sends that size.
    public var videoSize: (width: Int, height: Int)? {
        get { videoWidth > 0 ? (videoWidth, videoHeight) : nil }
        set { videoWidth = newValue?.width ?? 0; videoHeight = newValue?.height ?? 0 }
    }
    private var videoWidth = 0
    private var videoHeight = 0
    /// Preferred audio rate; PipeWire resamples to it.
    public var audioSampleRate: Int
    /// When set, every source ends by itself this many seconds after it started (like the
    /// test source), so `waitUntilFinished` reports the end of a `--duration` run.
    public var durationSeconds: Double?
    /// Portal path only: how long to wait for each portal answer, the user's dialog included.
    public var portalTimeoutSeconds: Double = 60
    /// Portal path only: where the restore token is kept between runs; nil disables it.
    public var portalRestoreToken: PortalRestoreToken? = PortalRestoreToken.defaultLocation()

    public init(screen: Bool = true, screenNode: String? = nil,
                appAudio: Bool = true, appAudioNode: String? = nil,
                mic: Bool = true, micNode: String? = nil,
                cursor: Cursor = .embedded, videoBufferCount: Int = 2, audioSampleRate: Int = 48_000,
                durationSeconds: Double? = nil) {
        self.screen = screen
        self.screenNode = screenNode
        self.appAudio = appAudio
        self.appAudioNode = appAudioNode
        self.mic = mic
        self.micNode = micNode
        self.cursor = cursor
        self.videoBufferCount = videoBufferCount
        self.audioSampleRate = audioSampleRate
        self.durationSeconds = durationSeconds
    }
}
