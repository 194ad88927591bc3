/// The command line, the environment and the config file merged into one `CommandLineOptions`:
/// the command line beats the environment, which beats the config file.
package struct SettingsLoader {
    /// `$STREAM_KEY`, `$BROADCAST_URL`, `$XDG_CONFIG_HOME`, `$HOME` (empty values count as unset).
    package var environment: [String: String]

    package init(environment: [String: String]) { self.environment = environment }

    /// What was loaded.
    package struct Loaded {
        /// The merged settings.
        package var options: CommandLineOptions
        /// The config file read, or nil (none found, `--config none`, or no `$HOME`).
        package var configPath: String?
        /// The file looked for when none was read (for `--print-config`).
        package var lookedFor: String?
    }

    /// `cli` is the command line parsed alone (for `--config`); `arguments` are parsed again over
    /// the file's settings so each given option replaces the file's value.
    package func load(arguments: [String], cli: CommandLineOptions) throws(UsageError) -> Loaded {
        let explicit = cli.configPath
        let path = explicit == "none" ? nil : (explicit ?? ConfigFile.defaultPath(environment: environment))
        var base = CommandLineOptions()
        var read: String?
        if let path, let entries = try ConfigFile.read(path, required: explicit != nil) {
            base = try ConfigFile.options(entries, path: path, home: env("HOME"))
            read = path
        }
        var o: CommandLineOptions
        do { o = try CommandLineOptions.parse(arguments, into: base, origin: .commandLine) }
        catch let e as UsageError { throw e }
        catch { throw UsageError("\(error)") }
        // The environment beats the file: $BROADCAST_URL replaces the file's destinations,
        // $STREAM_KEY its key file.
        if env("BROADCAST_URL") != nil, o.origins["url"]?.isConfig == true {
            o.urls = []
            o.origins["url"] = nil
            o.givenText["url"] = nil
        }
        if env("STREAM_KEY") != nil, o.origins["key-file"]?.isConfig == true {
            o.keyFile = nil
            o.origins["key-file"] = nil
            o.givenText["key-file"] = nil
        }
        return Loaded(options: o, configPath: read, lookedFor: read == nil ? path : nil)
    }

    private func env(_ name: String) -> String? {
        guard let v = environment[name], !v.isEmpty else { return nil }
        return v
    }
}
