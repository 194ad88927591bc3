import BroadcastCore

/// The session's memory plan: what each part holds, measured or reserved, against the budget.
public struct MemoryPlan: Sendable, CustomStringConvertible {
    public var budgetBytes: Int
    /// Every part the plan adds up, one line each in the order the plan shows them: the fixed
    /// parts (`Part`) first, then each destination's own lines, then the replay ring. A part is a
    /// line even at 0; `lines` leaves out those the plan does not show. Destinations contribute
    /// their own lines (`DestinationSink.memoryPlanLines`); `PipelineAssembler` fills the fixed parts from
    /// each stage's reserved or measured bytes.
    public private(set) var parts: [Line]

    /// The plan's fixed parts: their keys (the JSON names), in order, and their labels.
    public enum Part: String, CaseIterable, Sendable {
        case runtimeBaseline = "runtime_baseline"
        case x264AtOpen = "x264_at_open"
        case x264Working = "x264_working"
        case audioEncoderAtOpen = "audio_encoder_at_open"
        case framePool = "frame_pool"
        case audio = "audio"
        case interleaverStaging = "interleaver_staging"
        case sendQueues = "send_queues"
        case capture = "capture"
        case sessionCode = "session_code"

        /// The label the text plan shows.
        public var label: String {
            switch self {
            case .runtimeBaseline: return "runtime baseline (measured)"
            case .x264AtOpen: return "x264 at open (measured)"
            case .x264Working: return "x264 working frames (planned)"
            case .audioEncoderAtOpen: return "audio encoder at open (measured)"
            case .framePool: return "encoder input frame pool"
            case .audio: return "audio lanes + mixer"
            case .interleaverStaging: return "interleaver staging"
            case .sendQueues: return "send queues (byte caps)"
            case .capture: return "capture source buffers"
            case .sessionCode: return "session code (measured)"
            }
        }

        /// This part's line with `bytes`.
        public func line(_ bytes: Int) -> Line { Line(key: rawValue, label: label, bytes: bytes) }
    }

    /// The key of the replay ring's line (its label names its seconds).
    static let replayKey = "replay_ring"

    /// The bytes of `part`.
    public subscript(part: Part) -> Int {
        get { parts.first { $0.key == part.rawValue }?.bytes ?? 0 }
        set {
            if let i = parts.firstIndex(where: { $0.key == part.rawValue }) { parts[i].bytes = newValue }
        }
    }

    /// RSS before any encoder opened: runtime, libraries, CLI. Charged with a process-scoped
    /// budget; 0 with a session-scoped one (`hostBytesAtPrepare` holds the figure then).
    public var baselineBytes: Int { get { self[.runtimeBaseline] } set { self[.runtimeBaseline] = newValue } }
    /// What the budget counts (`MemoryBudgetScope`).
    public var budgetScope: MemoryBudgetScope = .process
    /// Why that scope applies ("the CLI's default", "bk_config_set_memory_budget_scope", ...).
    public var budgetScopeSource: String = "configuration"
    /// The host process's RSS when the session was prepared: shown, and charged only through
    /// `baselineBytes` with a process-scoped budget.
    public var hostBytesAtPrepare: Int = 0
    /// The file-backed part of `baselineBytes` (RssFile: code and read-only data then resident).
    public var baselineFileBytes: Int = 0
    /// RssFile when the plan was made (encoders open): `scripts/bench`'s memory matrix measures
    /// the code paged in after the plan from it (small: the session-code line holds the rest).
    public var fileBytesAtPlan: Int = 0
    /// RSS growth measured across x264_encoder_open.
    public var videoEncoderBytes: Int { get { self[.x264AtOpen] } set { self[.x264AtOpen] = newValue } }
    public var audioEncoderBytes: Int { get { self[.audioEncoderAtOpen] } set { self[.audioEncoderAtOpen] = newValue } }
    public var framePoolBytes: Int { get { self[.framePool] } set { self[.framePool] = newValue } }
    public var audioBytes: Int { get { self[.audio] } set { self[.audio] = newValue } }
    public var stagingBytes: Int { get { self[.interleaverStaging] } set { self[.interleaverStaging] = newValue } }
    public var queueBytes: Int { get { self[.sendQueues] } set { self[.sendQueues] = newValue } }
    /// x264 allocates its reference and lookahead frames on the first encodes, after open;
    /// this is the planned size of that working set.
    public var encoderWorkingBytes: Int { get { self[.x264Working] } set { self[.x264Working] = newValue } }
    /// Buffers the capture source holds (reported by the embedding tool or the CLI).
    public var captureBytes: Int { get { self[.capture] } set { self[.capture] = newValue } }
    /// What the destinations hold beyond their send queues, each kind's own lines
    /// (`DestinationSink.memoryPlanLines`: an RTMP publisher's chunk reader, libsrt's buffers, WHIP's
    /// packet history and libraries, an MP4 recorder's fragment), merged by `merged(_:)`.
    public var destinationLines: [Line] {
        get { parts.filter { Part(rawValue: $0.key) == nil && $0.key != Self.replayKey } }
        set {
            parts.removeAll { Part(rawValue: $0.key) == nil && $0.key != Self.replayKey }
            let at = parts.firstIndex { $0.key == Self.replayKey } ?? parts.count
            parts.insert(contentsOf: newValue, at: at)
        }
    }
    /// Code and read-only data the session's parts (destinations, interleaver, mixer, lanes,
    /// replay ring) faulted in while the pipeline was built: RssFile's growth across that, measured.
    public var sessionCodeBytes: Int { get { self[.sessionCode] } set { self[.sessionCode] = newValue } }
    /// Where the budget came from ("default", "--memory-budget", "cgroup v2 limit ...").
    public var budgetSource: String = "configuration"
    /// The x264 configuration the plan is for, e.g. "veryfast" or
    /// "veryfast-lean (no sub-pel; cabac, deblock, 8x8dct, AQ kept; trellis)"; empty without video.
    public var encoderChoice: String = ""
    /// The replay ring and what saving a clip from it holds (0 without `--replay-seconds`).
    public var replayBytes: Int {
        get { parts.first { $0.key == Self.replayKey }?.bytes ?? 0 }
        set { if let i = parts.firstIndex(where: { $0.key == Self.replayKey }) { parts[i].bytes = newValue } }
    }
    /// Seconds the replay ring keeps.
    public var replaySeconds: Int = 0 {
        didSet {
            if let i = parts.firstIndex(where: { $0.key == Self.replayKey }) { parts[i].label = "replay ring (\(replaySeconds) s)" }
        }
    }
    /// When the plan does not fit with the ring: the most seconds that would (0: none).
    public var replayLongestFit: Int?

    public init(budgetBytes: Int, baselineBytes: Int, videoEncoderBytes: Int, audioEncoderBytes: Int,
                framePoolBytes: Int, audioBytes: Int, stagingBytes: Int, queueBytes: Int,
                encoderWorkingBytes: Int = 0) {
        self.budgetBytes = budgetBytes
        parts = Part.allCases.map { $0.line(0) } + [Line(key: Self.replayKey, label: "replay ring (0 s)", bytes: 0)]
        self.baselineBytes = baselineBytes
        self.videoEncoderBytes = videoEncoderBytes
        self.audioEncoderBytes = audioEncoderBytes
        self.framePoolBytes = framePoolBytes
        self.audioBytes = audioBytes
        self.stagingBytes = stagingBytes
        self.queueBytes = queueBytes
        self.encoderWorkingBytes = encoderWorkingBytes
    }

    /// x264 presets from heaviest to lightest. (The budget downgrade walks `EncoderLadder`.)
    public static let presetsByWeight = ["medium", "fast", "faster", "veryfast", "superfast", "ultrafast"]

    /// Planned x264 memory beyond what it holds right after open: `X264MemoryModel`'s measured
    /// table for this configuration and size.
    public static func x264WorkingBytes(_ v: VideoEncoderSettings) -> Int { X264MemoryModel.workingBytes(v) }

    /// "12.3 MB".
    public static func megabytes(_ b: Int) -> String {
        let tenths = (b * 10 + (1 << 19)) >> 20
        return "\(tenths / 10).\(tenths % 10) MB"
    }

    public var totalBytes: Int { parts.reduce(0) { $0 + $1.bytes } }

    /// Kept free below the budget for what the plan cannot see exactly (allocator slack, thread
    /// stacks, library growth): 4% of the budget.
    /// The plan prints the percentage ("headroom kept free (4%)"); tools/bktools/plan.py reads it from there.
    public var headroomBytes: Int { budgetBytes / Self.headroomDivisor }
    /// The headroom is 1/this of the budget.
    static let headroomDivisor = 25

    public var fits: Bool { budgetBytes <= 0 || totalBytes + headroomBytes <= budgetBytes }

    /// One line of the plan: a stable key (the JSON name), the text label, and its bytes.
    public struct Line: Sendable, Equatable {
        public var key: String
        public var label: String
        public var bytes: Int
        /// A cost the process pays once however many parts contribute it (a library's pages):
        /// `merged(_:)` counts the largest such line of a key, not their sum.
        public var once: Bool

        public init(key: String, label: String, bytes: Int, once: Bool = false) {
            self.key = key
            self.label = label
            self.bytes = bytes
            self.once = once
        }
    }

    /// Lines from several parts as the plan shows them: one line per key, in the order the keys
    /// first appear, with the sum of that key's lines plus the largest of its `once` lines.
    public static func merged(_ lines: [Line]) -> [Line] {
        var out: [Line] = []
        var shared: [String: Int] = [:]
        for line in lines {
            let i = out.firstIndex { $0.key == line.key } ?? {
                out.append(Line(key: line.key, label: line.label, bytes: 0))
                return out.count - 1
            }()
            if line.once {
                let before = shared[line.key] ?? 0
                if line.bytes > before {
                    out[i].bytes += line.bytes - before
                    shared[line.key] = line.bytes
                }
            } else {
                out[i].bytes += line.bytes
            }
        }
        return out
    }

    /// The lines the plan shows, in order: every part `totalBytes` adds up, except the runtime
    /// baseline under a session-scoped budget (the host's memory is not the session's), and the
    /// session code, the destinations' lines and the replay ring when they hold nothing (headroom
    /// and total are not lines: they are derived). The text and the JSON form are both rendered
    /// from these.
    public var lines: [Line] {
        parts.filter { line in
            switch Part(rawValue: line.key) {
            case .runtimeBaseline?: return budgetScope == .process
            case .sessionCode?: return line.bytes > 0
            case nil where line.key == Self.replayKey: return replaySeconds > 0
            case nil: return line.bytes > 0
            default: return true
            }
        }
    }

    public var description: String {
        let mb = MemoryPlan.megabytes
        func row(_ label: String, _ value: String) -> String { "  " + label.padding(toLength: 35) + value }
        var text: [String] = []
        if !encoderChoice.isEmpty { text.append(row("x264 configuration", encoderChoice)) }
        for line in lines { text.append(row(line.label, mb(line.bytes))) }
        text.append(row("headroom kept free (\(100 / Self.headroomDivisor)%)", mb(headroomBytes)))
        var total = row("total", "\(mb(totalBytes)) of \(budgetBytes > 0 ? mb(budgetBytes) : "unlimited") budget")
        if budgetBytes > 0 {
            // The headroom is kept free on top of the total; say so, or a total just under the
            // budget followed by "DOES NOT FIT" reads as a contradiction.
            let needed = totalBytes + headroomBytes
            total += needed <= budgetBytes
                ? " (\(mb(needed)) with the headroom)"
                : " (\(mb(needed)) with the headroom: over by \(mb(needed - budgetBytes)))"
        }
        text.append(total)
        text.append(row("budget from", budgetSource))
        text.append(row("budget scope", scopeText))
        if let n = replayLongestFit, !fits {
            text.append(n > 0 ? "  replay: at most --replay-seconds \(n) fits this budget"
                              : "  replay: no replay buffer fits this budget")
        }
        return text.joined(separator: "\n")
    }

    /// The `budget scope` row: which kind of budget, why, and with a session scope the host's
    /// resident memory it leaves out.
    public var scopeText: String {
        var t = "\(budgetScope.name): \(budgetScope.meaning) (\(budgetScopeSource))"
        if budgetScope == .session { t += "; the host held \(MemoryPlan.megabytes(hostBytesAtPrepare)) at prepare, not charged" }
        return t
    }

    /// The plan as one JSON object (the data `description` renders): `lines` in order with their
    /// keys, labels and bytes, then the derived figures. Byte counts are exact, not rounded.
    public var json: String {
        var out = "{\"budget_bytes\":\(budgetBytes),\"budget_source\":\(JSONString.quoted(budgetSource)),"
            + "\"budget_scope\":\"\(budgetScope.name)\",\"budget_scope_source\":\(JSONString.quoted(budgetScopeSource)),"
            + "\"host_bytes_at_prepare\":\(hostBytesAtPrepare),"
            + "\"x264_configuration\":\(JSONString.quoted(encoderChoice)),\"lines\":["
        for (i, line) in lines.enumerated() {
            out += (i == 0 ? "" : ",") + "{\"key\":\"\(line.key)\",\"label\":\(JSONString.quoted(line.label)),\"bytes\":\(line.bytes)}"
        }
        out += "],\"total_bytes\":\(totalBytes),\"headroom_bytes\":\(headroomBytes),"
            + "\"needed_bytes\":\(totalBytes + headroomBytes),\"fits\":\(fits),"
            + "\"baseline_file_bytes\":\(baselineFileBytes),\"file_bytes_at_plan\":\(fileBytesAtPlan),"
            + "\"replay_seconds\":\(replaySeconds),\"replay_longest_fit\":\(replayLongestFit.map(String.init) ?? "null")}"
        return out
    }
}

private extension String {
    func padding(toLength n: Int) -> String { count >= n ? self + " " : self + String(repeating: " ", count: n - count) }
}
