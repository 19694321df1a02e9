// mock-model.mjs: a small OpenAI-compatible chat-completions server on
// 127.0.0.1 for the e2e test.  It records every request body and answers from
// a script: a function (body, index) -> {text} or {toolCall: {name, arguments}}.
// Streams (SSE) when the request asks for it, else answers in one JSON body.

import http from "node:http";

export const MODEL_ID = "clarity-mock";

function sse(res, chunks) {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.write("data: [DONE]\n\n");
  res.end();
}

function completion(reply, id, stream) {
  const created = Math.floor(Date.now() / 1000);
  const base = { id, object: stream ? "chat.completion.chunk" : "chat.completion", created, model: MODEL_ID };
  const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };
  if (reply.toolCall) {
    const call = {
      id: `call_${id}`,
      type: "function",
      function: { name: reply.toolCall.name, arguments: JSON.stringify(reply.toolCall.arguments ?? {}) },
    };
    if (!stream)
      return { ...base, choices: [{ index: 0, message: { role: "assistant", content: null, tool_calls: [call] }, finish_reason: "tool_calls" }], usage };
    return [
      { ...base, choices: [{ index: 0, delta: { role: "assistant", tool_calls: [{ index: 0, ...call }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }], usage },
    ];
  }
  const text = String(reply.text ?? "ok");
  if (!stream)
    return { ...base, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage };
  return [
    { ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: { content: text }, finish_reason: null }] },
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage },
  ];
}

// Starts the server; resolves to {url, port, requests, close()}.
export function startMockModel({ script, host = "127.0.0.1", port = 0, log = () => {} } = {}) {
  const requests = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url, "http://x");
      if (req.method === "GET" && url.pathname.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: MODEL_ID, object: "model", owned_by: "clarity-test" }] }));
        return;
      }
      if (req.method !== "POST" || !url.pathname.endsWith("/chat/completions")) {
        log(`mock: unexpected ${req.method} ${req.url}`);
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `mock model: no route ${req.method} ${url.pathname}` } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch (e) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `mock model: bad JSON: ${e.message}` } }));
        return;
      }
      const index = n++;
      requests.push(body);
      let reply;
      try {
        reply = script ? script(body, index) : { text: "ok" };
      } catch (e) {
        reply = { text: `mock script error: ${e.message}` };
      }
      log(`mock: request #${index} (${body.messages?.length ?? 0} messages, stream=${!!body.stream}) -> ${reply.toolCall ? `tool ${reply.toolCall.name}` : "text"}`);
      const out = completion(reply, `mock${index}`, !!body.stream);
      if (body.stream) sse(res, out);
      else {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(out));
      }
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve({
        url: `http://${host}:${addr.port}/v1`,
        port: addr.port,
        requests,
        close: () => new Promise((r) => server.close(() => r())),
      });
    });
  });
}

// The text of one OpenAI-style message (content string or parts).
export function messageText(m) {
  if (!m) return "";
  if (typeof m.content === "string") return m.content;
  if (Array.isArray(m.content)) return m.content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("\n");
  return "";
}
