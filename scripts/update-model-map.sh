#!/usr/bin/env bash
# Refreshes the model map toolscore embeds: LiteLLM's model_prices_and_context_window.json
# (MIT), as shipped in the `litellm` wheel on PyPI, into crates/provider/model-map/, with the
# package's version and today's date in VERSION. A refresh is one reviewed commit:
#
#   bash scripts/update-model-map.sh            # the newest litellm
#   bash scripts/update-model-map.sh 1.110.2    # a given version
#
# Needs python3 (pip) and PyPI. Nothing else in the tree changes; the tests then say what the
# new map changes (prices, what a model accepts).
set -euo pipefail
cd "$(dirname "$0")/.."

spec=litellm
if [ "$#" -gt 0 ]; then spec="litellm==$1"; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$work" "$spec"
wheel=$(ls "$work"/litellm-*.whl)
version=$(basename "$wheel" | cut -d- -f2)
python3 - "$wheel" "$work/map.json" <<'PY'
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    data = z.read("litellm/model_prices_and_context_window_backup.json")
json.loads(data)  # the file must be JSON before it replaces the shipped one
open(sys.argv[2], "wb").write(data)
PY
out=crates/provider/model-map
mkdir -p "$out"
gzip -n -9 -c "$work/map.json" > "$out/model_prices_and_context_window.json.gz"
printf 'litellm %s %s\n' "$version" "$(date -u +%Y-%m-%d)" > "$out/VERSION"
echo "model map: litellm $version, $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d) - ("sample_spec" in d), "models")' "$work/map.json"), $(stat -c %s "$out/model_prices_and_context_window.json.gz") bytes gzipped"
