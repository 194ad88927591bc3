#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit

/// The `broadcast` command from parsed argv to exit code: parse, build the configuration,
/// print the memory plan or start the session, run it, report. Returns instead of exiting so
/// the executable stays a thin driver.
package enum BroadcastCommand {
    /// Runs the command; `arguments` exclude the program name, `environment` holds
    /// `STREAM_KEY`/`BROADCAST_URL` when set (and the test-only `BROADCAST_TEST_FAULT`). Every error is said as one `broadcast: ` line.
    package static func run(arguments: [String], environment given: [String: String]) -> ExitCode {
        let cli: CommandLineOptions
        do {
            cli = try CommandLineOptions.parse(arguments)
        } catch {
            return fail(.usage, "\(error)")
        }
        if cli.help { print(Usage.text); return .success }
        if cli.version { print(Usage.version); return .success }
        if let g = cli.generate { print(g.text, terminator: ""); return .success }
        if let path = cli.checkHeartbeat { return HeartbeatCheck.run(path: path, maxAge: cli.maxAge) }
        if cli.listSources {
            do { print(try PipeWireCapture.listSources()); return .success } catch { return fail(.usage, error.message) }
        }
        // The config file's location comes from the environment the driver did not copy.
        var environment = given
        for name in ["XDG_CONFIG_HOME", "HOME"] where environment[name] == nil {
            if let v = getenv(name) { environment[name] = String(cString: v) }
        }
        let loaded: SettingsLoader.Loaded
        do {
            loaded = try SettingsLoader(environment: environment).load(arguments: arguments, cli: cli)
        } catch {
            return fail(.usage, "\(error)")
        }
        if cli.printConfig {
            let r = PrintConfig.render(loaded, environment: environment)
            print(r.text)
            return r.refused ? .usage : .success
        }
        let options = loaded.options
        SecretScrubber.scrubArgv(options)

        let built: BuiltConfiguration
        switch ConfigurationBuilder(environment: environment).build(options) {
        case .success(let b): built = b
        case .failure(let e): return fail(e.exitCode, e.message)
        }
        // After the build, so a refused configuration stays one line.
        if let warning = SecretScrubber.argvWarning(options) { say(warning) }
        built.notices.forEach(say)

        let config = built.configuration
        let video = config.video
        // Before the plan, so its measured baseline holds what stays resident, not the megabytes
        // of parsing and loader code start-up touched once; the code the session's parts run is
        // measured as they are built (the plan's session-code line). Again after the sources start.
        ProcessTuning.releaseStartupPages()
        let session = BroadcastSession(configuration: config)
        if options.printMemoryPlan { return printMemoryPlan(session, video: video, json: options.memoryPlanJSON) }

        let control: ControlServer?
        do { control = try options.controlPath.map { p throws(BroadcastError) in try ControlServer(path: p) } }
        catch { return fail(.usage, "--control \(error.description)") }
        defer { control?.close() }
        if let note = control?.takeoverNote, !options.quiet { say("note: --control \(note)") }
        ReplaySignal.control = control
        session.onEvent = { event in
            if let json = ControlServer.eventJSON(event) { control?.publish(json) }
            switch event {
            case .warning(let m): say("warning: \(m)")
            // The session's failure is said once, by the stream loop, as the run's exit message.
            case .failed: break
            case .reconnecting(let attempt, let delay): say("reconnecting (attempt \(attempt), in \(fixed(delay, 1)) s)")
            case .reconnected(let n): say("reconnected (\(n) so far)")
            case .started, .finished: break
            }
        }

        Signals.install()
        // Served from before the start, so a subscriber can see `started`, and `stop` works while connecting.
        do {
            try control?.start(session: session, version: Usage.version) { Signals.requestStop() }
        } catch {
            return fail(.streaming, "control socket: \(error)")
        }
        do {
            try session.start()
        } catch {
            // A signal or `stop` during the start is a stop, not a failure to connect: its line was said.
            if Signals.stopRequested {
                control?.publishStopped(exitCode: 0, reason: "stopped while connecting")
                return .success
            }
            return fail(ExitCode(rawValue: error.exitCode) ?? .connect, error.description)
        }
        if let note = session.downgradeNote { say("note: \(note)") }
        if !options.quiet {
            let preset = session.effectiveVideoSettings?.preset ?? video.preset
            say("live: \(session.destinationNames.joined(separator: ", ")) \(video.width)x\(video.height)@\(video.fps) "
                + "x264 \(preset) \(video.bitrateKbps) kbps + \(config.audio.codec.rawValue) \(config.audio.bitrateKbps) kbps "
                + "from \(built.sources.map(\.description).joined(separator: ", "))")
        }

        let reporter: StatsReporter
        do {
            reporter = try StatsReporter(jsonPath: options.statsJSON, statusLine: !options.quiet && isatty(2) != 0)
        } catch {
            session.finish()
            return fail(.usage, "\(error)")
        }

        var heartbeat: Heartbeat?
        if let path = options.heartbeatPath {
            do { heartbeat = try Heartbeat(path: path) } catch {
                session.finish()
                return fail(.usage, "\(error)")
            }
        }

        for source in built.sources {
            do {
                try source.start(into: session)
            } catch {
                built.sources.forEach { $0.stop() }
                session.finish()
                return fail(error.kind == .denied ? .connect : .usage, error.message)
            }
        }
        // Start-up is over: the code the sources' start touched need not stay resident either.
        ProcessTuning.releaseStartupPages()
        // ...but the first clip's code would come back long after the replay ring filled.
        if session.configuration.replay.seconds > 0 {
            session.rehearseReplaySave()
            ReplaySignal.rehearseAnnouncement()
        }
        let code = StreamLoop(session: session, sources: built.sources, reporter: reporter, heartbeat: heartbeat,
                              duration: options.duration, quiet: options.quiet,
                              testFault: TestFault(environment["BROADCAST_TEST_FAULT"])).run()
        control?.publishStopped(exitCode: code.rawValue,
                                reason: session.failure?.description ?? (code == .success ? "finished" : "exit \(code.rawValue)"))
        return code
    }

    /// `--print-memory-plan`: the plan for these settings on stdout; 0 if it fits, else 2.
    /// `json`: one JSON object, the plan's data (`MemoryPlan.json`) inside the run's settings; the
    /// text form renders the same plan.
    private static func printMemoryPlan(_ session: BroadcastSession, video: VideoEncoderSettings, json: Bool) -> ExitCode {
        do {
            let plan = try session.prepare()
            let preset = session.effectiveVideoSettings?.preset ?? video.preset
            let levers = plan.replaySeconds > 0 ? "lower --res, --video-bitrate or --replay-seconds, or raise --memory-budget"
                                                : "lower --res or raise --memory-budget"
            let verdict = plan.fits ? "fits" : "DOES NOT FIT, even with the lightest x264 preset: \(levers)"
            if json {
                print("{\"width\":\(video.width),\"height\":\(video.height),\"fps\":\(video.fps),"
                      + "\"requested_preset\":\(JSONString.quoted(video.preset)),\"preset\":\(JSONString.quoted(preset)),"
                      + "\"video_kbps\":\(video.bitrateKbps),"
                      + "\"note\":\(session.downgradeNote.map(JSONString.quoted) ?? "null"),\"verdict\":\(JSONString.quoted(verdict)),"
                      + "\"plan\":\(plan.json)}")
                return plan.fits ? .success : .usage
            }
            print("memory plan for \(video.width)x\(video.height)@\(video.fps) x264 \(preset), \(video.bitrateKbps) kbps:")
            if let note = session.downgradeNote { print(note) }
            print(plan.description)
            print(verdict)
            return plan.fits ? .success : .usage
        } catch {
            return fail(ExitCode(rawValue: error.exitCode) ?? .usage, error.description)
        }
    }

    private static func fail(_ code: ExitCode, _ message: String) -> ExitCode {
        say(message)
        return code
    }
}
