"""Plumbing every nodeagent plugin shares (device plugin and DRA drivers alike), written once.

control: ControlServer(path, commands, *, mode=0o660, list_known=True) — the JSON-lines control
    socket beside a plugin socket; request(path, cmd) / arequest(path, cmd) client helpers.
runner: run_until_stopped(start, stop, follow_parent=...), pick_path(flag, profile, environ, env,
    default), spawned_by_daemon(environ), the NODEAGENT_* environment variable names and defaults.
profile: load_profile(path, parse) — read a YAML profile and hand it to the plugin's parser, with
    ConfigError texts that name the file; reject_unknown(doc, path, allowed) field check.
"""
