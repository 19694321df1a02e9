// mock-anthropic.mjs: a scripted stand-in for the Anthropic Messages API on
// 127.0.0.1, for the Claude Code end-to-end test.  No dependencies.
//
//   node mock-anthropic.mjs --log FILE [--read FILE_TO_READ] [--port-file F]
//
// Listens on an ephemeral loopback port and prints "PORT <n>" on stdout
// (and into --port-file).  Every request is appended to --log as one JSON
// line {method, url, body}.  POST /v1/messages answers, streaming (SSE) or
// not, as the request asks:
//   - a compaction request (last user text starts with "CRITICAL: Respond
//     with TEXT ONLY"): a short summary text;
//   - a turn whose last user message carries a tool_result: a final text;
//   - a turn whose prompt contains "READ-THE-FILE" and offers the Read tool:
//     a tool_use of Read on --read FILE;
//   - a turn whose prompt contains "RUN-BIG-BASH" and offers Bash: a tool_use
//     of Bash printing 20,001 lines, one of them naming src/auth/session.ts;
//   - anything else: a short text.
// Other paths answer 404 (logged), so unexpected traffic shows in the log.
import http from 'node:http';
import fs from 'node:fs';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const logFile = opt('--log');
const readFile = opt('--read');
const portFile = opt('--port-file');
if (!logFile) {
  console.error('mock-anthropic: --log FILE is required');
  process.exit(64);
}

let seq = 0;

export const BIG_BASH =
  "seq -f 'ok %g - a test case passed' 1 10000; echo 'FAIL src/auth/session.ts: the token expired'; " +
  "seq -f 'ok %g - a test case passed' 10001 20000";

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b) => (b && b.type === 'text' ? b.text : ''))
    .join('\n');
}

function lastUser(messages) {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'user') return messages[i];
  return null;
}

function hasToolResult(msg) {
  return msg && Array.isArray(msg.content) && msg.content.some((b) => b && b.type === 'tool_result');
}

// What to answer: {blocks: [{type:'text', text} | {type:'tool_use', name, input}], stop}
function script(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = lastUser(messages);
  const lastText = last ? textOf(last.content) : '';
  const tools = Array.isArray(body.tools) ? body.tools.map((t) => t.name) : [];
  const lastBlockText = last && Array.isArray(last.content) && last.content.length
    ? textOf([last.content[last.content.length - 1]]) : lastText;
  if (/^\s*CRITICAL: Respond with TEXT ONLY/.test(lastBlockText) || /^\s*CRITICAL: Respond with TEXT ONLY/m.test(lastText)) {
    return {
      blocks: [{ type: 'text', text: '<summary>The user asked to read src/auth/session.ts; it was read.</summary>' }],
      stop: 'end_turn',
    };
  }
  if (hasToolResult(last)) {
    return { blocks: [{ type: 'text', text: 'I read src/auth/session.ts: it exports the session store.' }], stop: 'end_turn' };
  }
  if (lastText.includes('RUN-BIG-BASH') && tools.includes('Bash')) {
    // about 470 KB of output with one line naming a tracked file in the middle
    return {
      blocks: [
        { type: 'text', text: 'Running the tests.' },
        { type: 'tool_use', name: 'Bash', input: { command: BIG_BASH, description: 'Run the tests' } },
      ],
      stop: 'tool_use',
    };
  }
  if (readFile && lastText.includes('READ-THE-FILE') && tools.includes('Read')) {
    return {
      blocks: [
        { type: 'text', text: 'Let me read the file.' },
        { type: 'tool_use', name: 'Read', input: { file_path: readFile } },
      ],
      stop: 'tool_use',
    };
  }
  return { blocks: [{ type: 'text', text: 'OK.' }], stop: 'end_turn' };
}

function messageShell(body, id) {
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: body.model || 'claude-mock',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
  };
}

function sendJson(res, body, plan, id) {
  const msg = messageShell(body, id);
  msg.content = plan.blocks.map((b, i) =>
    b.type === 'text' ? { type: 'text', text: b.text } : { type: 'tool_use', id: `toolu_mock_${id}_${i}`, name: b.name, input: b.input });
  msg.stop_reason = plan.stop;
  msg.usage.output_tokens = 12;
  res.writeHead(200, { 'content-type': 'application/json', 'request-id': `req_${id}` });
  res.end(JSON.stringify(msg));
}

function sendStream(res, body, plan, id) {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': `req_${id}`,
  });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev('message_start', { message: messageShell(body, id) });
  plan.blocks.forEach((b, index) => {
    if (b.type === 'text') {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
    } else {
      ev('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: `toolu_mock_${id}_${index}`, name: b.name, input: {} },
      });
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
    }
    ev('content_block_stop', { index });
  });
  ev('message_delta', { delta: { stop_reason: plan.stop, stop_sequence: null }, usage: { output_tokens: 12 } });
  ev('message_stop', {});
  res.end();
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = { unparsed: raw.slice(0, 2000) };
    }
    fs.appendFileSync(logFile, JSON.stringify({ method: req.method, url: req.url, body }) + '\n');
    const path = req.url.split('?')[0];
    if (req.method === 'POST' && path === '/v1/messages' && body && Array.isArray(body.messages)) {
      const id = `msg_mock_${++seq}`;
      const plan = script(body);
      if (body.stream) sendStream(res, body, plan, id);
      else sendJson(res, body, plan, id);
      return;
    }
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 100 }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: `mock: no ${req.method} ${path}` } }));
  });
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  if (portFile) fs.writeFileSync(portFile, String(port));
  process.stdout.write(`PORT ${port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
