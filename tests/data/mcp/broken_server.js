// A stdio MCP server whose tools/list result is broken in the way argv[2] says.
const mode = process.argv[2] || "no-schema";
const rl = require("readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === "initialize") {
    send({ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: "broken", version: "0.0.1" } } });
  } else if (msg.method === "tools/list") {
    console.error("listing tools in mode " + mode);
    const tools = mode === "duplicate"
      ? [{ name: "a", inputSchema: { type: "object" } }, { name: "a", inputSchema: { type: "object" } }]
      : mode === "not-a-list" ? "nope" : [{ name: "a" }];
    send({ jsonrpc: "2.0", id: msg.id, result: { tools } });
  }
});
