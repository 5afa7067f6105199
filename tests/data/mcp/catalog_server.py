# A stdio MCP server that lists the tools of the JSON file argv[1] (read at each tools/list),
# under a name and version that never change: what a server that rewords a tool between two
# runs looks like (tests/it/cli_lock.rs).
import json
import sys

out = sys.stdout


def send(message):
    out.write(json.dumps(message) + "\n")
    out.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "shop", "version": "1.0.0"}}})
    elif msg.get("method") == "tools/list":
        with open(sys.argv[1]) as f:
            tools = json.load(f)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no such method"}})
