// Run a list of calls on the TypeScript SDK 4 (the latest 4.x) and print what each answered.
//
//   node sdk4_calls.mjs <calls.json or - for stdin> <baseURL> <apiKey>
//
// calls.json: [{"call": "documents.batchAdd", "args": [{...}]}, …]. "call" is a method path on
// the client ("add", "search.memories", …), or "get"/"post"/… for the client's own raw request
// methods (a route no resource names, such as GET /v3/memories/{id}). The output is one JSON line:
// a list, per call, of {"ok": reply} or {"error": {"status", "body", "name"}}. A call that fails
// does not stop the rest.

import { readFileSync } from "node:fs";
import { APIError, Supermemory } from "supermemory";
import { VERSION } from "supermemory/version";

const [callsPath, baseURL, apiKey] = process.argv.slice(2);
const calls = JSON.parse(readFileSync(callsPath === "-" ? 0 : callsPath, "utf8"));
const client = new Supermemory({ baseURL, apiKey, maxRetries: 0, timeout: 60000 });

async function run({ call, args = [] }) {
  const names = call.split(".");
  const method = names.pop();
  const target = names.reduce((object, name) => object[name], client);
  if (typeof target?.[method] !== "function") throw new Error(`SDK ${VERSION} has no ${call}`);
  const reply = await target[method](...args);
  return reply === undefined ? null : reply;
}

const outcomes = [];
for (const call of calls) {
  try {
    outcomes.push({ ok: await run(call) });
  } catch (err) {
    if (!(err instanceof APIError)) throw err;
    outcomes.push({ error: { status: err.status ?? null, body: err.error ?? null, name: err.constructor.name } });
  }
}
process.stdout.write(JSON.stringify({ version: VERSION, outcomes }) + "\n");
