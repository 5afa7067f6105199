#!/usr/bin/env bash
# Installs the published MCP servers the tests talk to (scripts/mcp/package.json, pinned by
# scripts/mcp/package-lock.json) with this machine's Node.js and npm, into a cache folder, so a
# fresh CI machine gets them and a developer's second run costs nothing.
#
#   scripts/mcp-servers.sh install   install (or reuse) and print the node_modules folder
#   scripts/mcp-servers.sh path      print the node_modules folder (exit 1 when not installed)
#
# TOOLSCORE_NPM_CACHE overrides the cache folder (default ~/.cache/toolscore/npm).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${TOOLSCORE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolscore/npm}"
# One folder per lock file: a changed pin installs beside the old one instead of over a tree
# another test process may be reading.
stamp="$(sha256sum "$here/mcp/package-lock.json" | cut -c1-16)"
dest="$cache/$stamp"

case "${1:-}" in
  install)
    if [ -f "$dest/.installed" ]; then
      echo "$dest/node_modules"
      exit 0
    fi
    for tool in node npm; do
      if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: $tool is not installed; the MCP server tests need Node.js 18 or later and npm" >&2
        exit 1
      fi
    done
    mkdir -p "$cache"
    # Tests run in parallel: the first one installs, the others wait for it.
    exec 9>"$cache/.lock"
    flock 9
    if [ ! -f "$dest/.installed" ]; then
      rm -rf "$dest"
      mkdir -p "$dest"
      cp "$here/mcp/package.json" "$here/mcp/package-lock.json" "$dest/"
      (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
      touch "$dest/.installed"
    fi
    echo "$dest/node_modules"
    ;;
  path)
    if [ -f "$dest/.installed" ]; then
      echo "$dest/node_modules"
    else
      echo "error: not installed; run scripts/mcp-servers.sh install" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: scripts/mcp-servers.sh install|path" >&2
    exit 2
    ;;
esac
