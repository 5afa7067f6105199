#!/usr/bin/env bash
# The pip wheel, built from the tree and tried as a user would install it:
#   1. builds it with maturin (pyproject.toml, `bindings = "bin"`: the wheel carries the
#      release binary) into target/wheels; after `cargo build --release` this only relinks;
#   2. installs it in a fresh venv (target/wheel-venv), as `pip install toolscore` would;
#   3. runs `toolscore --version` and the README's quick start (`toolscore run`) from that
#      venv, in a copy of the example project, and checks what it prints.
# Run by .ci/run; by hand: `bash scripts/wheel.sh`. Needs python3 and PyPI (for maturin).
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION=1.16.0
build_venv=target/wheel-build-venv
if ! "$build_venv/bin/maturin" --version 2>/dev/null | grep -q " $MATURIN_VERSION\$"; then
  python3 -m venv --clear "$build_venv"
  "$build_venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$MATURIN_VERSION"
fi

rm -rf target/wheels
"$build_venv/bin/maturin" build --release --locked --out target/wheels
wheels=(target/wheels/toolscore-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "error: expected one wheel in target/wheels, found ${#wheels[@]}" >&2
  exit 1
fi
echo "wheel: ${wheels[0]} ($(stat -c %s "${wheels[0]}") bytes)"

python3 -m venv --clear target/wheel-venv
target/wheel-venv/bin/pip install --quiet --disable-pip-version-check "${wheels[0]}"
installed="$PWD/target/wheel-venv/bin/toolscore"

version=$("$installed" --version)
echo "installed: $version"
case "$version" in
  "toolscore $(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"*) ;;
  *) echo "error: the wheel's binary says '$version'" >&2; exit 1 ;;
esac

# The quick start, in a copy of the example project so nothing lands in this tree's reports/.
project=$(mktemp -d)
trap 'rm -rf "$project"' EXIT
cp -r toolscore.yaml datasets scenarios "$project/"
out=$(cd "$project" && "$installed" run --progress off)
for expected in \
  "REPLAY: no model was called. Responses replayed from datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz" \
  "suite: 61 cases, 2440 trials scored, 0 infrastructure errors (not scored)"; do
  if ! grep -qF "$expected" <<<"$out"; then
    echo "error: the quick start from the wheel did not print: $expected" >&2
    echo "$out" >&2
    exit 1
  fi
done
echo "the quick start ran from the wheel's binary"
