"""Leaf utilities with no nodeagent concept of their own, used across the daemon; each imports at
most another of them and nodeagent.errors, so any package may use them (the layers contracts put
util/ at the bottom).

- Time and tasks: clock.py (the injected clock and its fake), ticker.py (one timer for many periodic
  checks), backoff.py (the one exponential retry-delay rule), tasks.py (cancel and await).
- Process plumbing: lock.py (flocks on what the daemon owns), fswatch.py (inotify directory watch
  behind a port), httpserve.py (bind an aiohttp app), gcsettings.py (garbage-collector thresholds),
  gilsettings.py (the thread switch interval), mallocsettings.py (malloc's mmap threshold),
  kubeclient.py (an ApiClient from a kubeconfig, as every REST client here builds it).
- Kubernetes' value spellings: quantity.py (apimachinery's resource quantities), timefmt.py
  (HumanDuration ages), logtext.py (untrusted strings quoted and bounded for log lines).

The entry points and the daemon's own modules stay at the package root: cli, daemon, supervisor,
systemd, hardening, logs, node, errors.
"""
