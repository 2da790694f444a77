// What memorybench's Supermemory provider (supermemoryai/memorybench,
// src/providers/supermemory/index.ts) does, with the SDK version its bun.lock pins (4.0.0):
// one `client.add` per session, poll `documents.get` then `memories.get` until each document is
// done or failed, then one `search.memories` per question. Prints one JSON object on stdout.
//
//   node memorybench_client.mjs <input.json or - for stdin> [baseURL] [apiKey]
//
// The base URL and key default to SUPERMEMORY_BASE_URL / SUPERMEMORY_API_KEY, as the SDK reads
// them. The input: {containerTag, sessions: [{sessionId, messages, metadata: {date?,
// formattedDate?}}], questions: [string], limit?, pollMs?, timeoutMs?, maxRetries?}.

import { readFileSync } from "node:fs";
import { Supermemory } from "supermemory-4.0.0";

const [inputPath, baseURL, apiKey] = process.argv.slice(2);
const input = JSON.parse(readFileSync(inputPath === "-" ? 0 : inputPath, "utf8"));
const pollMs = input.pollMs ?? 2000; // memorybench's interval
const timeoutMs = input.timeoutMs ?? 300000; // and its timeout, per document

const client = new Supermemory({
  ...(baseURL ? { baseURL } : {}),
  ...(apiKey ? { apiKey } : {}),
  ...(input.maxRetries !== undefined ? { maxRetries: input.maxRetries } : {}),
});

// The provider's content: a date preamble, then the session's messages as JSON, `<`/`>` escaped.
function sessionContent(session) {
  const sessionStr = JSON.stringify(session.messages).replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const formattedDate = session.metadata?.formattedDate;
  return formattedDate
    ? `Here is the date the following session took place: ${formattedDate}\n\nHere is the session as a stringified JSON:\n${sessionStr}`
    : `Here is the session as a stringified JSON:\n${sessionStr}`;
}

async function ingest() {
  const documentIds = [];
  for (const session of input.sessions) {
    const isoDate = session.metadata?.date;
    const response = await client.add({
      content: sessionContent(session),
      containerTag: input.containerTag,
      metadata: { sessionId: session.sessionId, ...(isoDate ? { date: isoDate } : {}) },
    });
    documentIds.push(response.id);
  }
  return documentIds;
}

async function pollUntilSettled(get) {
  const start = Date.now();
  let status;
  while (Date.now() - start < timeoutMs) {
    status = (await get()).status;
    if (status === "done" || status === "failed") return status;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return `timeout (${status})`;
}

async function awaitIndexing(documentIds) {
  const indexed = [];
  for (const id of documentIds) {
    const documentStatus = await pollUntilSettled(() => client.documents.get(id));
    const memoryStatus = await pollUntilSettled(() => client.memories.get(id));
    indexed.push({ id, documentStatus, memoryStatus });
  }
  return indexed;
}

async function search(question) {
  const response = await client.search.memories({
    q: question,
    containerTag: input.containerTag,
    limit: input.limit ?? 10,
    threshold: 0.3,
    searchMode: "hybrid",
    include: { chunks: true, summaries: true },
  });
  return { question, results: response.results ?? [], total: response.total, timing: response.timing };
}

const documentIds = await ingest();
const indexed = await awaitIndexing(documentIds);
const searches = [];
for (const question of input.questions) searches.push(await search(question));
process.stdout.write(JSON.stringify({ documentIds, indexed, searches }) + "\n");
