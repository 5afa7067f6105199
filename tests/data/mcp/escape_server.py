# A stdio MCP server with the escapes `toolscore probe --security` looks for
# (tests/it/probe_security.rs), in the mode argv[1] names:
#
# - vulnerable: read_note opens os.path.join(notes, path) as given (`../` and absolute paths
#   escape), and so does export_notes for the nested `files[].path` of each file it exports;
#   fetch_page, check_status and export_notes (its nested `options.notify_url`) fetch any URL
#   or host; make_label hands its name to
#   `sh -c "echo NAME"`; set_mode ignores properties it does not know and values of the wrong
#   type;
# - safe: the same tools refuse with isError what falls outside the notes folder, a host not on
#   the allowlist, or arguments the schema forbids (nested objects and array items included), and make_label echoes its name verbatim
#   (an echo of a payload is not an escape);
# - blind: the vulnerable tools with their proof removed: read_note drops the lines of
#   /etc/passwd that start with `root:`, make_label runs the shell but returns none of its
#   output, and fetch_page and check_status fetch nothing;
# - windows: a test double of a vulnerable server on Windows, for the traversal proof alone:
#   read_note and export_notes resolve a path as Windows does (ntpath: `\` and `/` both
#   separate, `C:\` is absolute, `..` climbs) from C:\srv\notes, on a folder standing for
#   drive C: that holds Windows\win.ini as Windows ships it and no etc/passwd; only these two
#   tools are listed, as the double stands for Windows' path handling and nothing else;
# - hostile: read_note answers a huge text full of terminal escapes around a passwd line, and
#   make_label its shell's output (the marker) inside one; its own name and one more tool's
#   name and parameter hold escapes too (the evidence quoted from it must come out bounded and inert).
#
# With ESCAPE_LOG set, each tools/call appends the tool's name as a line to that file, so a
# test can count the calls each tool got.
import atexit
import json
import ntpath
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

# C:\Windows\win.ini as Windows 10 and 11 ship it.
WIN_INI = ("; for 16-bit app support\r\n[fonts]\r\n[extensions]\r\n[mci extensions]\r\n"
           "[files]\r\n[Mail]\r\nMAPI=1\r\n")
WINDOWS_NOTES = "C:\\srv\\notes"
_drive = []


def drive_folder():
    """The folder standing for drive C: of the windows double, made at the first read."""
    if not _drive:
        folder = os.path.realpath(tempfile.mkdtemp(prefix="escape-drive-c-"))
        atexit.register(shutil.rmtree, folder, True)
        os.makedirs(os.path.join(folder, "Windows"))
        os.makedirs(os.path.join(folder, "srv", "notes"))
        with open(os.path.join(folder, "Windows", "win.ini"), "w", newline="") as f:
            f.write(WIN_INI)
        with open(os.path.join(folder, "srv", "notes", "welcome.txt"), "w") as f:
            f.write("Welcome to the notes folder.\n")
        _drive.append(folder)
    return _drive[0]


def note_file(path):
    """The file an unsafe tool opens for PATH: the notes folder joined with it as given; on the
    windows double, what a Windows server's os.path.join(r"C:\srv\notes", path) names, mapped
    onto the drive folder (a path off drive C: opens nothing)."""
    if mode != "windows":
        return os.path.join(notes_folder(), path)
    drive, rest = ntpath.splitdrive(ntpath.normpath(ntpath.join(WINDOWS_NOTES, path)))
    if drive.upper() != "C:":
        return None
    return os.path.join(drive_folder(), *[p for p in rest.split("\\") if p])


def read_file(path):
    """(text, is_error) of an unsafe read of the note PATH."""
    try:
        with open(note_file(path), newline="") as f:
            return f.read(100_000), False
    except (OSError, TypeError) as e:
        return f"no such note: {type(e).__name__}", True


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
    # Its path and its URL are nested: a file's path in an array of objects, the URL in an
    # object whose other required property must be there for the call to be valid.
    tool("export_notes", "Export notes, and tell a webhook when it is done.",
         {"files": {"type": "array", "items": {
             "type": "object",
             "properties": {"path": {"type": "string"},
                            "encoding": {"type": "string", "enum": ["utf-8", "latin-1"]}},
             "required": ["path", "encoding"]}},
          "options": {"type": "object",
                      "properties": {"notify_url": {"type": "string", "format": "uri"},
                                     "overwrite": {"type": "boolean"}},
                      "required": ["overwrite"]}},
         ["files", "options"]),
]
if mode == "windows":
    TOOLS = [t for t in TOOLS if t["name"] in ("read_note", "export_notes")]
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
    return value_fault(SCHEMAS[name], args, "")


def value_fault(schema, value, where):
    """What breaks SCHEMA in VALUE at WHERE (a JSON path), or None: type, enum, required and
    unknown properties, into objects and array items."""
    name = where or "arguments"
    expected = TYPES.get(schema.get("type"))
    if expected and (not isinstance(value, expected) or isinstance(value, bool) != (expected is bool)):
        return f"`{name}` must be of type {schema['type']}"
    if "enum" in schema and value not in schema["enum"]:
        return f"`{name}` must be one of {schema['enum']}"
    if isinstance(value, dict) and "properties" in schema:
        props = schema["properties"]
        for key, inner in value.items():
            at = f"{where}.{key}" if where else key
            if key not in props:
                if schema.get("additionalProperties") is False:
                    return f"unknown property `{at}`"
                continue
            fault = value_fault(props[key], inner, at)
            if fault:
                return fault
        for key in schema.get("required", []):
            if key not in value:
                return f"`{where}.{key}` is required" if where else f"`{key}` is required"
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            fault = value_fault(schema["items"], item, f"{where}[{i}]")
            if fault:
                return fault
    return None


def inside_notes(path):
    """Whether PATH, resolved, is a file of the notes folder (the safe twin's check)."""
    notes = notes_folder()
    return os.path.realpath(os.path.join(notes, path)).startswith(notes + os.sep)


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
        if mode == "hostile":
            return text(HOSTILE)
        if safe and not inside_notes(path):
            return text("that note is outside the notes folder", True)
        body, failed = read_file(path)
        if failed:
            return text(body, True)
        if mode == "blind":
            body = "\n".join(l for l in body.splitlines() if not l.startswith("root:"))
        return text(body)
    if name == "export_notes":
        files, options = args.get("files"), args.get("options")
        if not isinstance(files, list) or not isinstance(options, dict):
            # Unsafe, not careless: arguments of the wrong shape get a plain tool error.
            return text("`files` must be a list and `options` an object", True)
        bodies = []
        for f in files:
            # A missing required property fails the call (KeyError): only a valid call reads.
            path, encoding = f["path"], f["encoding"]
            if safe and not inside_notes(path):
                return text(f"{path!r} is outside the notes folder", True)
            body, failed = read_file(path)
            if failed:
                return text(body, True)
            if mode == "blind":
                body = "\n".join(l for l in body.splitlines() if not l.startswith("root:"))
            bodies.append(f"--- {path} ({encoding})\n{body}")
        overwrite = options["overwrite"]
        url = options.get("notify_url")
        if url is not None:
            if safe and urllib.parse.urlparse(url).hostname not in ALLOWED_HOSTS:
                return text("that webhook's host is not on the allowlist", True)
            if mode != "blind":
                try:
                    fetch(url)
                except Exception as e:
                    return text(f"webhook failed: {type(e).__name__}", True)
        return text(f"exported {len(bodies)} notes (overwrite: {overwrite})\n" + "\n".join(bodies))
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
        try:
            result = call(name, params.get("arguments") or {})
        except Exception as e:
            # As a real server's framework does: a crash in a tool is that call's tool error.
            result = text(f"internal error: {type(e).__name__}", True)
        if result is None:
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}})
