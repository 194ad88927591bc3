import BroadcastCapture
import BroadcastKit

extension SourceFactory {
    /// Y4M video (file or stdin), optionally with raw PCM on the app-audio lane.
    static func y4mSources(path: String, _ o: CommandLineOptions) throws -> Made {
        let y4m = Y4MSource(path: path)
        do {
            let header = try y4m.open()
            if header.width > 8192 || header.height > 8192 { throw UsageError("y4m: frame size too large") }
        } catch let e as CaptureError {
            throw e
        }
        var sources: [CaptureSource] = [y4m]
        var resample = false
        if let pcm = o.pcmPath {
            let format = try PCMFormat(parsing: o.pcmFormat)
            sources.append(try PCMSource(path: pcm, format: format, lane: .appAudio))
            resample = format.sampleRate != 48_000
        }
        var made = Made(sources: sources, hasVideo: true, hasAudio: o.pcmPath != nil, note: nil)
        made.audioMayNeedResampling = resample
        return made
    }
}
