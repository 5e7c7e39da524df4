// The official TypeScript MCP SDK (npm @modelcontextprotocol/sdk) as a
// client of a stdio server.
//
// usage: MCP_TS_MODULES=DIR/node_modules node client.mjs CALLS_JSON -- COMMAND ARG...
//   CALLS_JSON: [{"tool": NAME, "args": {...}}, ...], called in order
// Prints one JSON document like client.py's. Client.callTool validates
// each structuredContent against the tool's outputSchema (a mismatch is a
// failure). Anything the SDK writes to stderr (e.g. schema warnings) is
// collected in "warnings". Exit 0, or 2 on failure.
// The SDK is found in $MCP_TS_MODULES (a node_modules folder).
import { join } from "node:path";
import { pathToFileURL } from "node:url";
const sdk = (p) => import(pathToFileURL(join(process.env.MCP_TS_MODULES ?? "node_modules", "@modelcontextprotocol/sdk/dist/esm", p)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const calls = JSON.parse(process.argv[2]);
const cmd = process.argv.slice(process.argv.indexOf("--") + 1);
const warnings = [];
const origWarn = console.warn;
console.warn = (...a) => warnings.push(a.join(" "));
const origError = console.error;
console.error = (...a) => warnings.push(a.join(" "));

try {
  const transport = new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "ignore" });
  let protocol = null;
  const set = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    protocol = v;
    set?.(v);
  };
  const client = new Client({ name: "baton-test", version: "1.0.0" });
  await client.connect(transport);
  const out = {
    protocol,
    server: client.getServerVersion()?.name ?? null,
    instructions: client.getInstructions() ?? null,
  };
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null, annotations: t.annotations ?? null }));
  out.results = [];
  for (const call of calls) {
    const r = await client.callTool({ name: call.tool, arguments: call.args ?? {} });
    out.results.push({
      tool: call.tool,
      isError: Boolean(r.isError),
      structured: r.structuredContent ?? null,
      text: (r.content ?? []).map((b) => b.text ?? "").join("\n"),
    });
  }
  out.warnings = warnings;
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.stack ?? e), warnings }) + "\n");
  process.exit(2);
}
