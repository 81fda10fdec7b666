#!/usr/bin/env bash
# Test tools that do not come from PyPI: Prometheus and promtool (Debian package
# `prometheus`). Best effort: without root or a package registry the tests that need
# them skip with a reason. grpcurl comes from the PyPI test extra.
set -u
if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-tools: prometheus not installed (needs root and apt-get); its tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# The package's postinst may try to start the service; policy-rc.d keeps it from doing so.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
timeout 600 apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
  || { timeout 300 apt-get update >/dev/null 2>&1 && timeout 600 apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; } \
  || echo "install-test-tools: could not install prometheus; its tests will skip" >&2
exit 0
