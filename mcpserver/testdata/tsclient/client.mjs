// An MCP client on the official TypeScript SDK, driven by mcpserver's
// interop tests (tsclient_test.go): it runs one scenario against airlock's
// MCP server and prints what it saw as one JSON object on stdout. The Go
// test decides what is right.
//
//   node client.mjs stdio COMMAND [ARG...]   (the server's environment is ours)
//   node client.mjs http URL                 (the bearer token in $AIRLOCK_MCP_TOKEN)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, ...rest] = process.argv.slice(2);

function transport() {
  if (mode === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: "inherit" });
  }
  const headers = { Authorization: `Bearer ${process.env.AIRLOCK_MCP_TOKEN}` };
  return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}

// The elicitation handler answers as `answer` says: accept with the id
// it was given, or with a forged one.
let answer = "accept";
const asked = [];

async function connect(name) {
  const client = new Client({ name, version: "1" }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const id = req.params.requestedSchema.properties.requestId.default;
    asked.push({ message: req.params.message, id });
    const requestId = answer === "forge" ? "eli-ffffffffffffffffffffffffffffffff" : id;
    return { action: "accept", content: { requestId, approve: true } };
  });
  await client.connect(transport());
  return client;
}

function seen(r) {
  const s = r.structuredContent ?? {};
  return {
    isError: r.isError === true,
    text: (r.content ?? []).map((c) => c.text ?? "").join(""),
    session: r._meta?.["airlock/mcpSession"] ?? "",
    exitCode: s.exitCode,
    stdout: s.stdout?.text ?? "",
    refusal: s.refusal ?? null,
    approval: s.approval ?? null,
  };
}

const call = async (client, name, command, args, opts) =>
  seen(await client.callTool({ name, arguments: { command, args } }, undefined, opts));

const out = {};
const a = await connect("ts-sdk-test-a");
const listed = await a.listTools();
out.tools = listed.tools.map((t) => ({
  name: t.name,
  required: t.inputSchema.required ?? [],
  properties: Object.keys(t.inputSchema.properties ?? {}).sort(),
  hasOutputSchema: t.outputSchema !== undefined,
  annotations: t.annotations ?? {},
}));
out.allowed = await call(a, "shell", "sh", ["-c", "echo ts > /workspace/state; echo hello"]);
out.kept = await call(a, "shell", "sh", ["-c", "cat /workspace/state"]);
out.denied = await call(a, "read_file", "cat", ["/etc/shadow"]);
out.approved = await call(a, "read_file", "cat", ["/etc/hostname"]);
answer = "forge";
out.forged = await call(a, "read_file", "cat", ["/etc/hostname"]);
out.asked = asked;

// A second client: a sandbox of its own.
const b = await connect("ts-sdk-test-b");
out.other = await call(b, "shell", "sh", ["-c", "cat /workspace/state 2>&1; true"]);
await b.close();

// A call cancelled mid-run, once the server said it is running; then the
// same sandbox goes on.
const ac = new AbortController();
const started = Date.now();
let cancelledAt = 0;
try {
  await a.callTool({ name: "shell", arguments: { command: "sleep", args: ["30"] } }, undefined, {
    signal: ac.signal,
    timeout: 60000,
    onprogress: () => {
      if (!cancelledAt) {
        cancelledAt = Date.now();
        ac.abort("the test cancels it");
      }
    },
  });
  out.cancelled = { error: "" };
} catch (e) {
  out.cancelled = { error: String(e) };
}
out.after = await call(a, "shell", "sh", ["-c", "cat /workspace/state"]);
out.cancelledAfterMs = cancelledAt - started;
out.afterCancelMs = Date.now() - cancelledAt;
await a.close();
process.stdout.write(JSON.stringify(out) + "\n");
