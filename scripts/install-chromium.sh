#!/usr/bin/env bash
# Installs headless Chromium from Debian's `chromium` package for tests/it/report_browser.rs,
# only when it is missing (a browser build fetched by a tool of its own cannot be downloaded
# here; Debian's package can). Needs root, as CI and the developer machines run.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "error: chromium is missing and installing it needs root: apt-get install -y chromium" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium
