import BroadcastCore

/// Retry schedule after a lost connection, after OBS: 2 s, then x1.5 with jitter, capped.
public struct ReconnectPolicy: Sendable, Equatable {
    /// Attempts before giving up; 0 retries forever.
    public var maxAttempts: Int
    public var initialDelaySeconds: Double
    public var multiplier: Double
    public var maxDelaySeconds: Double
    /// Each delay is scaled by a random factor in 1 ± jitter, so many clients do not retry in step.
    public var jitter: Double

    public init(maxAttempts: Int = 20, initialDelaySeconds: Double = 2, multiplier: Double = 1.5,
                maxDelaySeconds: Double = 30, jitter: Double = 0.2) {
        self.maxAttempts = maxAttempts
        self.initialDelaySeconds = initialDelaySeconds
        self.multiplier = multiplier
        self.maxDelaySeconds = maxDelaySeconds
        self.jitter = jitter
    }

    public static let `default` = ReconnectPolicy()
    /// For sinks that cannot reconnect (files).
    public static let never = ReconnectPolicy(maxAttempts: -1)

    /// Why `maxAttempts` is refused (`BroadcastLimits.reconnectAttempts`), or nil: the words every
    /// front end reports (the CLI with its option's name in front).
    public static func refusal(attempts: Int) -> String? {
        let r = BroadcastLimits.reconnectAttempts
        guard !r.contains(attempts) else { return nil }
        return "reconnect attempts \(attempts) outside \(BroadcastLimits.text(r)) (0 retries forever, -1 never reconnects)"
    }

    /// Why `initialDelaySeconds` is refused (`BroadcastLimits.reconnectDelaySeconds`), or nil.
    public static func refusal(firstDelaySeconds delay: Double) -> String? {
        let r = BroadcastLimits.reconnectDelaySeconds
        guard !(delay.isFinite && r.contains(delay)) else { return nil }
        return "reconnect delay \(BroadcastLimits.number(delay)) s outside \(BroadcastLimits.text(r)) seconds"
    }

    /// The first refusal of this policy's attempts or first delay, or nil when both are in range.
    public var refusal: String? {
        Self.refusal(attempts: maxAttempts) ?? Self.refusal(firstDelaySeconds: initialDelaySeconds)
    }

    /// Delay before attempt `n` (1-based), with `unit` a random number in [0, 1).
    public func delay(attempt n: Int, unit: Double) -> Double {
        var d = initialDelaySeconds
        if n > 1 { for _ in 1..<n { d *= multiplier } }
        d = min(d, maxDelaySeconds)
        return max(0.1, d * (1 + jitter * (2 * unit - 1)))
    }
}
