# A stdio MCP server with the escapes `toolscore probe --security` looks for
# (tests/it/probe_security.rs), in the mode argv[1] names:
#
# - vulnerable: read_note opens os.path.join(notes, path) as given (`../` and absolute paths
#   escape); fetch_page and check_status fetch any URL or host; make_label hands its name to
#   `sh -c "echo NAME"`; set_mode ignores properties it does not know and values of the wrong
#   type;
# - safe: the same tools refuse with isError what falls outside the notes folder, a host not on
#   the allowlist, or arguments the schema forbids, and make_label echoes its name verbatim
#   (an echo of a payload is not an escape);
# - blind: the vulnerable tools with their proof removed: read_note drops the lines of
#   /etc/passwd that start with `root:`, make_label runs the shell but returns none of its
#   output, and fetch_page and check_status fetch nothing;
# - hostile: read_note answers a huge text full of terminal escapes around a passwd line, and
#   make_label its shell's output (the marker) inside one; its own name and one more tool's
#   name and parameter hold escapes too (the evidence quoted from it must come out bounded and inert).
#
# With ESCAPE_LOG set, each tools/call appends the tool's name as a line to that file, so a
# test can count the calls each tool got.
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

mode = sys.argv[1]
safe = mode in ("safe", "silent")
out = sys.stdout
_notes = []


def notes_folder():
    """The notes folder, made at the first read (a server killed before it leaves none)."""
    if not _notes:
        folder = os.path.realpath(tempfile.mkdtemp(prefix="escape-notes-"))
        atexit.register(shutil.rmtree, folder, True)
        with open(os.path.join(folder, "welcome.txt"), "w") as f:
            f.write("Welcome to the notes folder.\n")
        _notes.append(folder)
    return _notes[0]

ALLOWED_HOSTS = {"example.com"}


def send(message):
    out.write(json.dumps(message) + "\n")
    out.flush()


def tool(name, description, properties, required, extra=None):
    schema = {"type": "object", "properties": properties, "required": required}
    schema.update(extra or {})
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    tool("read_note", "Read a note from the notes folder.",
         {"path": {"type": "string", "description": "The note's file name"}}, ["path"]),
    tool("fetch_page", "Fetch a web page and return its first bytes.",
         {"url": {"type": "string", "format": "uri"}}, ["url"]),
    tool("check_status", "Ask a host for its /status page.",
         {"host": {"type": "string"}}, ["host"]),
    tool("make_label", "Make a label for a note.",
         {"name": {"type": "string"}, "color": {"type": "string", "enum": ["red", "blue"]}},
         ["name", "color"]),
    tool("set_mode", "Switch the notes folder's mode.",
         {"mode": {"type": "string", "enum": ["fast", "careful"]}, "level": {"type": "integer"}},
         ["mode"], {"additionalProperties": False}),
]
STRING_TOOLS = {"read_note": "path", "fetch_page": "url", "check_status": "host", "make_label": "name"}
if mode == "hostile":
    # A name and a parameter that would recolour and clear a terminal.
    TOOLS.append(tool("\x1b[31mevil\x1b[0m", "A tool.", {"file\x1b[2J": {"type": "string"}}, []))
SCHEMAS = {t["name"]: t["inputSchema"] for t in TOOLS}
TYPES = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}


def text(t, is_error=False):
    return {"content": [{"type": "text", "text": t}], "isError": is_error}


def schema_fault(name, args):
    """What breaks the tool's schema, or None (the safe twin's validation)."""
    schema = SCHEMAS[name]
    props = schema["properties"]
    for key, value in args.items():
        if key not in props:
            if schema.get("additionalProperties") is False:
                return f"unknown property `{key}`"
            continue
        expected = TYPES.get(props[key].get("type"))
        if expected and (not isinstance(value, expected) or isinstance(value, bool) != (expected is bool)):
            return f"`{key}` must be of type {props[key]['type']}"
        if "enum" in props[key] and value not in props[key]["enum"]:
            return f"`{key}` must be one of {props[key]['enum']}"
    for key in schema["required"]:
        if key not in args:
            return f"`{key}` is required"
    return None


# No proxy from the environment: what is fetched is what was asked for.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url):
    with OPENER.open(url, timeout=2) as r:
        return r.read(2000).decode("utf-8", "replace")


HOSTILE = ("\x1b]0;owned\x07\x1b[31m" + "x" * 200_000 + "\x1b[2J\n"
           "root:x:0:0:\x1b[5mroot:/root:/bin/sh\r\n" + "\x07" * 1000)


def call(name, args):
    if mode == "silent" and name == "read_note":
        time.sleep(3600)
    if safe:
        fault = schema_fault(name, args)
        if fault:
            return text(fault, True)
    elif name in STRING_TOOLS and not isinstance(args.get(STRING_TOOLS[name]), str):
        # Unsafe, not careless: a value that is not text gets a plain tool error.
        return text(f"`{STRING_TOOLS[name]}` must be a string", True)
    if name == "read_note":
        path = args.get("path")
        notes = notes_folder()
        if mode == "hostile":
            return text(HOSTILE)
        if safe:
            full = os.path.realpath(os.path.join(notes, path))
            if not full.startswith(notes + os.sep):
                return text("that note is outside the notes folder", True)
        else:
            full = os.path.join(notes, path)
        try:
            with open(full) as f:
                body = f.read(100_000)
        except (OSError, TypeError) as e:
            return text(f"no such note: {type(e).__name__}", True)
        if mode == "blind":
            body = "\n".join(l for l in body.splitlines() if not l.startswith("root:"))
        return text(body)
    if name == "fetch_page":
        url = args.get("url")
        if safe and urllib.parse.urlparse(url).hostname not in ALLOWED_HOSTS:
            return text("that host is not on the allowlist", True)
        if mode == "blind":
            return text("page fetching is queued")
        try:
            return text(fetch(url))
        except Exception as e:
            return text(f"fetch failed: {type(e).__name__}", True)
    if name == "check_status":
        host = args.get("host")
        if safe and host not in ALLOWED_HOSTS:
            return text("that host is not on the allowlist", True)
        if mode == "blind":
            return text("status check is queued")
        try:
            return text(fetch(f"http://{host}/status"))
        except Exception as e:
            return text(f"status check failed: {type(e).__name__}", True)
    if name == "make_label":
        label = args.get("name")
        if safe:
            return text(f"label: {label}")
        ran = subprocess.run(["sh", "-c", "echo " + label], capture_output=True, text=True, timeout=5)
        if mode == "blind":
            return text("label made")
        if mode == "hostile":
            return text("\x1b[31m" + "y" * 100_000 + ran.stdout + "\x1b[0m" + "\x07" * 1000)
        return text("label: " + ran.stdout)
    if name == "set_mode":
        return text(f"mode set to {args.get('mode')}")
    return None


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"escape-{mode}" + ("\x1b]0;owned\x07" if mode == "hostile" else ""),
                           "version": "1.0.0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": TOOLS}})
    elif method == "tools/call":
        params = msg.get("params") or {}
        name = params.get("name")
        if os.environ.get("ESCAPE_LOG"):
            with open(os.environ["ESCAPE_LOG"], "a") as log:
                log.write(f"{name}\n")
        result = call(name, params.get("arguments") or {})
        if result is None:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}})
