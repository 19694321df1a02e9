// e2e.mjs: `clarity mcp` driven by the official MCP client (@modelcontextprotocol/sdk)
// over stdio.
//
//   node e2e.mjs --clarity /abs/path/to/clarity
//
// Seeds a session with `clarity replay` into a temporary state database,
// connects, checks the negotiated protocol version and the server info,
// lists the tools (clarity_predict must be absent: there is no code graph),
// validates each input schema, calls every tool (clarity_progress on two
// recorded pytest runs) and checks the results
// (text content + structuredContent), then the error paths: a tool error
// (isError) for bad arguments and an unknown session, a JSON-RPC error for an
// unknown tool.  Fails loudly with a message naming the check.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const args = process.argv.slice(2);
const i = args.indexOf('--clarity');
let step = 'setup';
let tmp = null;
let client = null;

function fail(msg, detail) {
  console.error(`\ne2e-mcp: FAIL at step "${step}": ${msg}`);
  if (detail !== undefined) console.error(typeof detail === 'string' ? detail : JSON.stringify(detail, null, 2).slice(0, 4000));
  if (tmp) console.error(`(state kept in ${tmp})`);
  process.exit(1);
}
const ok = (msg) => console.log(`ok - ${msg}`);
const check = (cond, msg, detail) => {
  if (!cond) fail(msg, detail);
};

if (i < 0 || !args[i + 1]) fail('usage: node e2e.mjs --clarity /abs/path/to/clarity');
const clarity = path.resolve(args[i + 1]);
check(fs.existsSync(clarity), `no clarity binary at ${clarity} (build it first: make all)`);

tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-e2e-mcp-'));
const state = path.join(tmp, 'clarity.db');

step = 'seed a session with clarity replay';
{
  const turns = [
    { session: 'demo', turn: 1, role: 'user', text: 'Refactor the ClaraCore session handling in src/auth/session.ts' },
    { session: 'demo', turn: 1, role: 'assistant', text: 'Reading src/auth/session.ts', tool_name: 'Read', tool_args: { file_path: 'src/auth/session.ts' } },
    { session: 'demo', turn: 2, role: 'user', text: 'Now ClaraCore needs tests for the FocusEngine bridge' },
    { session: 'demo', turn: 2, role: 'assistant', text: 'Added tests for ClaraCore.' },
    { session: 'demo', turn: 2, role: 'assistant', text: '', tool_name: 'Bash', tool_args: { command: 'pytest -q tests' } },
    { session: 'demo', turn: 2, role: 'tool', tool_name: 'Bash', text: '.....F\nFAILED tests/test_bridge.py::test_bridge - AssertionError\n1 failed, 5 passed in 0.21s\n' },
    { session: 'demo', turn: 3, role: 'assistant', text: '', tool_name: 'Bash', tool_args: { command: 'pytest -q tests' } },
    { session: 'demo', turn: 3, role: 'tool', tool_name: 'Bash', text: '.....F\nFAILED tests/test_bridge.py::test_bridge - AssertionError\n1 failed, 5 passed in 0.20s\n' },
  ];
  const file = path.join(tmp, 'turns.jsonl');
  fs.writeFileSync(file, turns.map((t) => JSON.stringify(t)).join('\n') + '\n');
  const r = spawnSync(clarity, ['replay', file, '--json', '--state', state], { encoding: 'utf8' });
  check(r.status === 0, `clarity replay exited with ${r.status}`, r.stderr);
  ok('seeded session "demo"');
}

step = 'connect';
const stderrChunks = [];
const transport = new StdioClientTransport({ command: clarity, args: ['mcp', '--state', state, '--session', 'demo'], stderr: 'pipe' });
transport.stderr?.on('data', (d) => stderrChunks.push(String(d)));
client = new Client({ name: 'clarity-e2e', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (e) {
  fail(`the SDK client could not initialize: ${e.message}`, stderrChunks.join(''));
}
{
  const info = client.getServerVersion();
  check(info && info.name === 'clarity', 'serverInfo.name is not "clarity"', info);
  check(client.getServerCapabilities()?.tools, 'the server does not announce the tools capability', client.getServerCapabilities());
  ok(`initialized: ${info.name} ${info.version}, protocol ${LATEST_PROTOCOL_VERSION} requested`);
}

step = 'tools/list';
const expected = ['clarity_scores', 'clarity_anchor', 'clarity_unanchor', 'clarity_prune', 'clarity_stats', 'clarity_progress'];
{
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of expected) check(names.includes(n), `tool ${n} is not listed`, names);
  check(!names.includes('clarity_predict'), 'clarity_predict is listed without a code graph', names);
  for (const t of tools) {
    check(t.inputSchema?.type === 'object', `${t.name}: inputSchema.type must be "object"`, t.inputSchema);
    check(t.inputSchema.properties?.session?.type === 'string', `${t.name}: no "session" string property`, t.inputSchema);
    check(typeof t.description === 'string' && t.description.length > 10, `${t.name}: no description`);
  }
  const anchor = tools.find((t) => t.name === 'clarity_anchor');
  check(JSON.stringify(anchor.inputSchema.required) === '["item"]', 'clarity_anchor must require "item"', anchor.inputSchema);
  ok(`tools/list: ${names.join(', ')}`);
}

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  check(Array.isArray(r.content) && r.content[0]?.type === 'text', `${name}: no text content`, r);
  return r;
}
function okResult(name, r) {
  check(!r.isError, `${name}: unexpected tool error: ${r.content?.[0]?.text}`, r);
  check(r.structuredContent && typeof r.structuredContent === 'object', `${name}: no structuredContent`, r);
  check(JSON.stringify(JSON.parse(r.content[0].text)) === JSON.stringify(r.structuredContent),
    `${name}: the text content is not the serialized structuredContent`, r);
}

step = 'tools/call';
{
  let r = await call('clarity_scores', {});
  okResult('clarity_scores', r);
  check(r.structuredContent.session === 'demo', 'clarity_scores: the default session is not --session demo', r.structuredContent);
  const ids = r.structuredContent.items.map((x) => x.id);
  check(ids.includes('claracore') && ids.includes('file:src/auth/session.ts'), 'clarity_scores: seeded items missing', ids);
  ok(`clarity_scores: ${ids.length} items, top ${ids[0]}`);

  r = await call('clarity_anchor', { item: 'ClaraCore', reason: 'the project' });
  okResult('clarity_anchor', r);
  check(r.structuredContent.anchored === true && r.structuredContent.itemId === 'claracore', 'clarity_anchor: not anchored', r.structuredContent);
  r = await call('clarity_scores', { session: 'demo', limit: 1 });
  check(r.structuredContent.items.length === 1 && r.structuredContent.items[0].anchored, 'clarity_scores limit 1: the anchored item is not first', r.structuredContent);
  ok('clarity_anchor: claracore anchored and ranked first');

  r = await call('clarity_unanchor', { item: 'claracore' });
  okResult('clarity_unanchor', r);
  check(r.structuredContent.anchored === false, 'clarity_unanchor: still anchored', r.structuredContent);
  ok('clarity_unanchor');

  r = await call('clarity_prune', { dryRun: true });
  okResult('clarity_prune', r);
  check(r.structuredContent.applied === false && typeof r.structuredContent.evaluated === 'number', 'clarity_prune dryRun: unexpected result', r.structuredContent);
  ok(`clarity_prune (dry run): ${r.structuredContent.evaluated} evaluated, ${r.structuredContent.pruned} would be pruned`);

  r = await call('clarity_stats', {});
  okResult('clarity_stats', r);
  check(r.structuredContent.totalItems >= 2, 'clarity_stats: totalItems', r.structuredContent);
  ok(`clarity_stats: ${r.structuredContent.totalItems} items`);

  r = await call('clarity_progress', {});
  okResult('clarity_progress', r);
  const p = r.structuredContent;
  check(p.session === 'demo' && p.runs.length === 2, 'clarity_progress: two runs expected', p);
  check(p.runs[0].command === 'pytest -q tests' && p.runs[0].passed === 5 && p.runs[0].failed === 1,
    'clarity_progress: the first run', p.runs[0]);
  check(JSON.stringify(p.runs[1].failing) === '["test_bridge"]' && p.runs[1].editsSincePrevious === false,
    'clarity_progress: the re-run without an edit', p.runs[1]);
  check(p.noImprovementStreak === 1 && Math.abs(p.ema - 5 / 6) < 1e-6, 'clarity_progress: trend', p);
  ok(`clarity_progress: ${p.runs.length} runs, failing ${p.runs[1].failing.join(', ')}, no edit before the re-run`);
}

step = 'errors';
{
  let r = await call('clarity_anchor', {});
  check(r.isError === true && /item/.test(r.content[0].text), 'a missing required argument must be a tool error (isError)', r);
  r = await call('clarity_stats', { session: 'no-such-session' });
  check(r.isError === true && /unknown session/.test(r.content[0].text), 'an unknown session must be a tool error', r);
  r = await call('clarity_scores', { limit: 'ten' });
  check(r.isError === true, 'a wrongly typed argument must be a tool error', r);
  let threw = null;
  try {
    await client.callTool({ name: 'clarity_nope', arguments: {} });
  } catch (e) {
    threw = e;
  }
  check(threw && threw.code === -32602, 'an unknown tool must be a JSON-RPC error -32602', threw ? { code: threw.code, message: threw.message } : 'no error');
  await client.ping();
  ok('tool errors are isError results; an unknown tool is JSON-RPC error -32602; ping answers');
}

await client.close();

// The graph tools, with a repository that has a code graph: a second server
// started with --workspace lists them and answers from the graph.
step = 'graph tools';
{
  const repo = path.join(tmp, 'repo');
  fs.mkdirSync(path.join(repo, 'app'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'app', 'core.py'),
    'def parse(text):\n    """Parse text."""\n    return helper(text)\n\n\ndef helper(text):\n    return text\n\n\n' +
    'def _hidden():\n    pass\n');
  fs.writeFileSync(path.join(repo, 'app', 'cli.py'), 'from app.core import parse\n\n\ndef main():\n    parse("x")\n');
  const git = (...a) => spawnSync('git', a, { cwd: repo, encoding: 'utf8', env: { ...process.env,
    GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t', GIT_CONFIG_NOSYSTEM: '1' } });
  git('init', '-q', '.');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  const b = spawnSync(clarity, ['graph', 'build', repo], { encoding: 'utf8' });
  check(b.status === 0, `clarity graph build exited with ${b.status}`, b.stderr);
  const t2 = new StdioClientTransport({ command: clarity, args: ['mcp', '--state', state, '--session', 'demo', '--workspace', repo], stderr: 'pipe' });
  const c2 = new Client({ name: 'clarity-e2e-graph', version: '1.0.0' });
  await c2.connect(t2);
  const { tools } = await c2.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['clarity_predict', 'clarity_zoom', 'clarity_impact', 'clarity_cochange'])
    check(names.includes(n), `${n} is not listed with a code graph`, names);
  const callOn = async (name, args) => c2.callTool({ name, arguments: args });
  let r = await callOn('clarity_zoom', { path: 'app/core.py' });
  check(!r.isError, 'clarity_zoom: tool error', r);
  const syms = r.structuredContent.symbols.map((x) => x.name);
  check(JSON.stringify(syms) === '["parse","helper"]', 'clarity_zoom level 0: the public functions', syms);
  check(r.structuredContent.symbols[0].signature === 'def parse(text):' && r.structuredContent.symbols[0].doc === 'Parse text.',
    'clarity_zoom: signature and doc', r.structuredContent.symbols[0]);
  r = await callOn('clarity_impact', { symbol: 'parse', depth: 2 });
  check(!r.isError && r.structuredContent.callers.length === 1 && r.structuredContent.callers[0].name === 'main' &&
    r.structuredContent.callers[0].via === 'import', 'clarity_impact: main calls parse through an import', r.structuredContent);
  r = await callOn('clarity_cochange', { path: 'app/core.py' });
  check(!r.isError && r.structuredContent.neighbours[0]?.path === 'app/cli.py', 'clarity_cochange: cli.py changed with core.py', r.structuredContent);
  r = await callOn('clarity_zoom', { path: '../../etc/passwd', level: 2 });
  check(r.isError === true && /leaves the repository/.test(r.content[0].text), 'a path outside the repository must be refused', r);
  await c2.close();
  ok('graph tools: clarity_zoom (public contract), clarity_impact (main <- parse via import), clarity_cochange, a path outside refused');
}

fs.rmSync(tmp, { recursive: true, force: true });
console.log('e2e-mcp: all checks passed');
