# A stdio MCP server that answers initialize properly and tools/list in the hostile way
# argv[1] says (tests/mcp_bounds.rs): too many tools, endless or slow pages, a flood of stderr, an
# answer too large for one message, bytes that are not UTF-8, an enormous JSON-RPC error, or no
# answer at all from a server deaf to its closed stdin and to SIGTERM.
import json
import os
import signal
import sys
import time

mode = sys.argv[1]
out = sys.stdout.buffer


def send(message):
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def tool(name):
    return {"name": name, "description": "A tool.", "inputSchema": {"type": "object"}}


def tools_list(msg):
    rid = msg["id"]
    cursor = (msg.get("params") or {}).get("cursor")
    if mode == "many-tools":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool(f"t{i}") for i in range(100_000)]}})
    elif mode == "endless-pages":
        page = int(cursor or "0") + 1
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool(f"t{page}")], "nextCursor": str(page)}})
    elif mode == "slow-pages":
        time.sleep(0.5)
        page = int(cursor or "0") + 1
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [tool(f"t{page}")], "nextCursor": str(page)}})
    elif mode == "stderr-flood":
        line = b"x" * (1 << 20)
        for _ in range(400):
            sys.stderr.buffer.write(line)
        sys.stderr.buffer.write(b"\nlast words\n")
        sys.stderr.flush()
        sys.exit(3)
    elif mode == "huge-answer":
        big = tool("big")
        big["description"] = "d" * (50 << 20)
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [big]}})
    elif mode == "bad-utf8":
        out.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"tools": [{"name": "\xff\xfe", "inputSchema": {}}]}}\n' % rid)
        out.flush()
    elif mode == "blocked":
        # Only SIGKILL ends it; its pid on stderr lets the test check that it is gone.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stderr.write(f"blocked server pid {os.getpid()}\n")
        sys.stderr.flush()
        while True:
            time.sleep(1)
    elif mode == "huge-error":
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "E" * 100_000}})


for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0.0.1"}}})
    elif msg.get("method") == "tools/list":
        tools_list(msg)
