// List the tools of MCP servers published on npm, over stdio, for toolscore's benign lint corpus.
//
// Usage (in a scratch folder):
//   npm install @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/server-everything@2026.8.31 \
//     @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory \
//     @modelcontextprotocol/server-sequential-thinking
//   node list-mcp-tools.mjs OUT_DIR
//
// Writes OUT_DIR/<server>.json: the server's `tools/list` result ({"tools": [...]}), exactly as
// the server returned it, plus `"server": {name, version}` from its initialize answer.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { writeFileSync, mkdirSync, mkdtempSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";

const out = process.argv[2];
mkdirSync(out, { recursive: true });
const scratch = mkdtempSync(join(tmpdir(), "mcp-fs-"));
const servers = [
  ["server-everything", "node_modules/@modelcontextprotocol/server-everything/dist/index.js", ["stdio"]],
  ["server-filesystem", "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", [scratch]],
  ["server-memory", "node_modules/@modelcontextprotocol/server-memory/dist/index.js", []],
  ["server-sequential-thinking", "node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js", []],
];
for (const [name, script, args] of servers) {
  const transport = new StdioClientTransport({ command: "node", args: [script, ...args], stderr: "ignore" });
  const client = new Client({ name: "toolscore-corpus", version: "1" });
  await client.connect(transport);
  const info = client.getServerVersion();
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  writeFileSync(join(out, `${name}.json`), JSON.stringify({ server: info, tools }, null, 1) + "\n");
  console.error(`${name} ${info?.version}: ${tools.length} tools`);
  await client.close();
}
