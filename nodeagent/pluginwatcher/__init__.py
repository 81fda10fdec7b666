"""The plugin watcher: ROOT/plugins_registry sockets -> GetInfo -> the handler of the plugin's type.

model/reconcile are pure (desired vs actual world -> operations); watcher.py polls the
directory and runs the operations through executor.py, which speaks pluginregistration.
"""
