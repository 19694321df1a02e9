// e2e.mjs: clarity in the real Claude Code CLI, end to end, offline.
//
//   node e2e.mjs --clarity /abs/path/to/clarity [--keep]
//
// Runs Claude Code's native binary (from node_modules, @anthropic-ai/claude-code's
// platform package) in print mode with HOME in a temporary directory and
// ANTHROPIC_BASE_URL pointing at mock-anthropic.mjs on 127.0.0.1, after
// `clarity install claude-code --project`.  It proves:
//   1. the settings file clarity wrote is accepted (the hooks run at all);
//   2. the [CLARITY CONTEXT] block reaches the model: the request body holds
//      "UserPromptSubmit hook additional context: [CLARITY CONTEXT]";
//   3. the file the agent read (a scripted Read tool_use) is tracked as
//      referenced: clarity rpc clarity.getScores;
//   4. `/compact` runs PreCompact (the hook state shows it) and the block is
//      re-injected after it: the next request holds "SessionStart hook
//      additional context: [CLARITY CONTEXT]" after the compaction summary;
//   5. the /clarity slash command runs `clarity cmd` and its output reaches
//      the model;
//   6. a Bash output over toolOutput.maxChars reaches the model trimmed
//      (PostToolUse updatedToolOutput): head, tail, the line naming the
//      tracked file, markers;
//   7. /compact's summarization request carries clarity's keep list
//      (PreCompact stdout), and the kept items the summary lost come back in
//      the next prompt's block (PostCompact).
// Every failure prints what was expected, what was seen and where the logs
// are, and exits 1.  Nothing leaves loopback.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const clarityArg = args[args.indexOf('--clarity') + 1];
const keep = args.includes('--keep') || process.env.KEEP === '1';

let tmp = null;
let mock = null;
let step = 'setup';

function fail(msg, detail) {
  console.error(`\ne2e-claude-code: FAIL at step "${step}": ${msg}`);
  if (detail) console.error(String(detail).slice(0, 4000));
  if (tmp) console.error(`(logs kept in ${tmp}: mock requests in requests.jsonl, Claude Code debug logs in debug-*.log)`);
  if (mock) mock.kill('SIGTERM');
  process.exit(1);
}

function ok(msg) {
  console.log(`ok - ${msg}`);
}

if (args.indexOf('--clarity') < 0 || !clarityArg) fail('usage: node e2e.mjs --clarity /abs/path/to/clarity');
const clarity = path.resolve(clarityArg);
if (!fs.existsSync(clarity)) fail(`no clarity binary at ${clarity} (build it first: make all)`);

// Claude Code's native binary ships in a per-platform package.
const platform = `${process.platform}-${process.arch}`;
const claude = path.join(here, 'node_modules', '@anthropic-ai', `claude-code-${platform}`, 'claude');
if (!fs.existsSync(claude))
  fail(`no Claude Code binary at ${claude}`, 'run `npm ci --ignore-scripts` in adapters/claude-code (make e2e-claude-code does)');

tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'clarity-e2e-cc-'));
const home = path.join(tmp, 'home');
const proj = path.join(tmp, 'proj');
const stateDb = path.join(tmp, 'state', 'clarity.db');
const reqLog = path.join(tmp, 'requests.jsonl');
fs.mkdirSync(home);
fs.mkdirSync(path.join(proj, 'src', 'auth'), { recursive: true });
const readTarget = path.join(proj, 'src', 'auth', 'session.ts');
fs.writeFileSync(readTarget, 'export function openSession(user) {\n  return { user, started: Date.now() };\n}\n');

// ---- the mock Messages API --------------------------------------------------
step = 'start the mock Anthropic API';
mock = spawn(process.execPath, [path.join(here, 'mock-anthropic.mjs'), '--log', reqLog, '--read', readTarget], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const port = await new Promise((resolve, reject) => {
  let out = '';
  const timer = setTimeout(() => reject(new Error('the mock did not start within 10 s')), 10000);
  mock.stdout.on('data', (d) => {
    out += d;
    const m = /PORT (\d+)/.exec(out);
    if (m) {
      clearTimeout(timer);
      resolve(Number(m[1]));
    }
  });
  mock.on('exit', (code) => reject(new Error(`the mock exited with ${code}`)));
}).catch((e) => fail(e.message));
ok(`mock Messages API on 127.0.0.1:${port}`);

const env = {
  PATH: process.env.PATH,
  HOME: home,
  TMPDIR: tmp,
  CI: 'true',
  TERM: 'dumb',
  ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
  ANTHROPIC_API_KEY: 'sk-ant-dummy-e2e',
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_ERROR_REPORTING: '1',
  IS_SANDBOX: '1', // lets --dangerously-skip-permissions run as root
};

function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { cwd: proj, env, encoding: 'utf8', timeout: 180000, stdio: ['ignore', 'pipe', 'pipe'], ...opts });
  if (r.error) fail(`${path.basename(cmd)} ${argv.join(' ')}: ${r.error.message}`);
  return r;
}

let debugN = 0;
function claudeP(prompt, extra = []) {
  const debugLog = path.join(tmp, `debug-${++debugN}.log`);
  const r = run(claude, ['-p', prompt, '--output-format', 'json', '--dangerously-skip-permissions', '--debug-file', debugLog, ...extra]);
  if (r.status !== 0) fail(`claude -p ${JSON.stringify(prompt)} exited with ${r.status}`, r.stderr + r.stdout);
  let out;
  try {
    out = JSON.parse(r.stdout);
  } catch {
    fail(`claude -p ${JSON.stringify(prompt)} did not print JSON`, r.stdout + r.stderr);
  }
  if (out.is_error) fail(`claude -p ${JSON.stringify(prompt)} reported an error`, r.stdout);
  return { out, debugLog };
}

function requests() {
  if (!fs.existsSync(reqLog)) return [];
  return fs.readFileSync(reqLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

const messageRequests = () => requests().filter((r) => r.method === 'POST' && r.url.split('?')[0] === '/v1/messages');
const bodyText = (r) => JSON.stringify(r.body);

// A Stop whose transcript was not written yet leaves its turn to a detached
// child that holds the session's hook state locked until the turn has ended:
// what reads the session's state after a `claude -p` waits for that lock.
function settle(session) {
  const state = path.join(tmp, 'state', 'claude-code', `${session}.json`);
  if (session && fs.existsSync(state)) run('flock', [state, 'true']);
}

function clarityRpc(method, params) {
  settle(params?.session);
  const r = run(clarity, ['rpc', method, JSON.stringify(params), '--state', stateDb]);
  if (r.status !== 0) fail(`clarity rpc ${method} exited with ${r.status}`, r.stderr + r.stdout);
  return JSON.parse(r.stdout);
}

// ---- 1. install ----------------------------------------------------------------
step = 'clarity install claude-code --project';
{
  const r = run(clarity, ['install', 'claude-code', '--project', proj, '--state', stateDb]);
  if (r.status !== 0) fail(`exit status ${r.status}`, r.stderr + r.stdout);
  const settings = JSON.parse(fs.readFileSync(path.join(proj, '.claude', 'settings.json'), 'utf8'));
  for (const ev of ['UserPromptSubmit', 'PostToolUse', 'Stop', 'PreCompact', 'PostCompact', 'SessionStart', 'SessionEnd'])
    if (!settings.hooks?.[ev]?.some((g) => g.hooks?.some((h) => h.command.startsWith(clarity))))
      fail(`settings.json has no clarity hook for ${ev}`, JSON.stringify(settings, null, 2));
  if (!fs.existsSync(path.join(proj, '.claude', 'commands', 'clarity.md'))) fail('no .claude/commands/clarity.md');
  ok('clarity install wrote .claude/settings.json and .claude/commands/clarity.md');
}

// ---- 2. a turn with a Read ----------------------------------------------------
step = 'first turn (UserPromptSubmit, PostToolUse, Stop)';
const t1 = claudeP('READ-THE-FILE: how does ClaraCore open a session? Check the FocusEngine notes too.');
const sid = t1.out.session_id;
if (!sid) fail('no session_id in the JSON output', JSON.stringify(t1.out));
{
  const reqs = messageRequests();
  if (reqs.length < 2) fail(`expected 2 model requests (tool_use, then the answer), saw ${reqs.length}`);
  // Claude Code renders hook context as "<Event> hook additional context: <text>"
  // inside a system message (or a <system-reminder>) of the request.
  const withBlock = reqs.find((r) => /UserPromptSubmit hook additional context: \[CLARITY CONTEXT\]/.test(bodyText(r)));
  if (!withBlock)
    fail('the [CLARITY CONTEXT] block did not reach the model: no request holds "UserPromptSubmit hook additional context: [CLARITY CONTEXT]" (settings rejected, or the hook printed nothing)',
      bodyText(reqs[0]).slice(0, 3000));
  if (!/claracore/.test(bodyText(withBlock))) fail('the context block does not list claracore', bodyText(withBlock).slice(0, 3000));
  ok('settings accepted: the UserPromptSubmit hook ran and the [CLARITY CONTEXT] block reached the model');
  const toolTurn = reqs.find((r) => bodyText(r).includes('"tool_result"'));
  if (!toolTurn) fail('the scripted Read tool_use did not come back as a tool_result');
}
step = 'the file the agent read is tracked';
{
  const scores = clarityRpc('clarity.getScores', { session: sid });
  const item = scores.items.find((i) => i.id === 'file:src/auth/session.ts');
  if (!item) fail('file:src/auth/session.ts is not tracked', JSON.stringify(scores, null, 2));
  if (item.referenceCount < 1) fail('file:src/auth/session.ts has no reference', JSON.stringify(item));
  if (scores.currentTurn !== 1) fail(`expected turn 1 after one Stop, got ${scores.currentTurn}`);
  ok(`clarity.getScores: file:src/auth/session.ts referenced (referenceCount ${item.referenceCount}, score ${item.score.toFixed(1)}), turn ${scores.currentTurn}`);
  settle(sid);
  const hs = JSON.parse(fs.readFileSync(path.join(tmp, 'state', 'claude-code', `${sid}.json`), 'utf8'));
  if (!(hs.offset > 0) || hs.pending.length !== 0) fail('the hook state did not record the end of the turn', JSON.stringify(hs));
  ok(`hook state: transcript offset ${hs.offset}, no pending tool calls`);
}

// ---- 2b. a huge Bash output is trimmed -------------------------------------
step = 'a Bash output over toolOutput.maxChars';
{
  const n = messageRequests().length;
  claudeP('RUN-BIG-BASH: run the ClaraCore tests', ['--resume', sid]);
  const reqs = messageRequests().slice(n);
  const withResult = reqs.find((r) => (r.body.messages ?? []).some((m) => Array.isArray(m.content) &&
    m.content.some((b) => b?.type === 'tool_result' && JSON.stringify(b).includes('a test case passed'))));
  if (!withResult) fail('the Bash tool_result never reached the mock', reqs.map(bodyText).join('\n').slice(-3000));
  const last = withResult.body.messages.at(-1);
  const result = last.content.find((b) => b?.type === 'tool_result');
  const text = typeof result.content === 'string' ? result.content : (result.content ?? []).map((b) => b.text ?? '').join('\n');
  if (text.length > 21000) fail(`the Bash output reached the model untrimmed (${text.length} characters)`, text.slice(0, 2000));
  for (const want of ['ok 1 - a test case passed', 'ok 20000 - a test case passed', 'FAIL src/auth/session.ts: the token expired', ' lines elided (', '[clarity: '])
    if (!text.includes(want)) fail(`the trimmed Bash output lacks ${JSON.stringify(want)}`, text.slice(0, 3000) + '\n...\n' + text.slice(-1500));
  ok(`Bash: 20,001 lines reached the model as ${text.length} characters (head, tail, the line naming src/auth/session.ts)`);
}

// ---- 3. /compact -------------------------------------------------------------
step = '/compact (PreCompact, SessionStart compact)';
const before = messageRequests().length;
const t2 = claudeP('/compact', ['--resume', sid]);
{
  const reqs = messageRequests().slice(before);
  const compaction = reqs.find((r) => /CRITICAL: Respond with TEXT ONLY/.test(bodyText(r)));
  if (!compaction) fail('no compaction request reached the mock', reqs.map(bodyText).join('\n').slice(0, 3000));
  if (!/Keep these \(clarity[^]*- file:src\/auth\/session\.ts/.test(bodyText(compaction)))
    fail('the compaction request lacks the keep list (PreCompact stdout)', bodyText(compaction).slice(-3000));
  const dbg = fs.readFileSync(t2.debugLog, 'utf8');
  // Claude Code's debug log: "PreCompact:manual [<command>] completed with status 0".
  const esc = clarity.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const preCompactRe = new RegExp(`PreCompact(:\\w+)? \\[${esc} hook[^\\]]*\\] (completed|finished) with status 0`);
  if (!preCompactRe.test(dbg)) fail('the debug log shows no PreCompact hook running clarity with status 0', dbg.split('\n').filter((l) => /Hooks|PreCompact/.test(l)).join('\n').slice(-3000));
  const transcript = fs.readFileSync(
    path.join(home, '.claude', 'projects', fs.readdirSync(path.join(home, '.claude', 'projects'))[0], `${sid}.jsonl`), 'utf8')
    .trim().split('\n').map((l) => JSON.parse(l));
  const boundary = transcript.findIndex((l) => l.type === 'system' && l.subtype === 'compact_boundary');
  if (boundary < 0) fail('the transcript has no compact_boundary');
  const reinjected = transcript.slice(boundary).find((l) => l.attachment?.type === 'hook_additional_context' && l.attachment.hookEvent === 'SessionStart' && (l.attachment.content || []).join('').includes('[CLARITY CONTEXT]'));
  if (!reinjected) fail('no SessionStart (compact) additional context with the block after the compact boundary', transcript.slice(boundary).map((l) => JSON.stringify(l).slice(0, 300)).join('\n'));
  if (!reinjected.attachment.content.join('').includes('file:src/auth/session.ts'))
    fail('the re-injected block does not hold file:src/auth/session.ts', JSON.stringify(reinjected.attachment));
  ok('/compact: the compaction request carries the keep list, PreCompact ran clarity, SessionStart(compact) re-injected the block');
}
step = 'the turn after /compact';
{
  const n = messageRequests().length;
  claudeP('Thanks. What should ClaraCore do next?', ['--resume', sid]);
  const reqs = messageRequests().slice(n);
  const main = reqs.find((r) => /What should ClaraCore do next/.test(bodyText(r)));
  if (!main) fail('the prompt after /compact never reached the mock');
  const text = bodyText(main);
  const summaryAt = text.indexOf('it was read.');
  const reinjectAt = text.indexOf('SessionStart hook additional context: [CLARITY CONTEXT]');
  if (summaryAt < 0) fail('the request after /compact does not carry the compaction summary', text.slice(0, 3000));
  if (reinjectAt < 0) fail('the request after /compact does not carry the re-injected block ("SessionStart hook additional context: [CLARITY CONTEXT]")', text.slice(0, 4000));
  if (!/UserPromptSubmit hook additional context: \[CLARITY CONTEXT\]/.test(text)) fail('the new prompt has no context block', text.slice(0, 3000));
  // the mock's summary names src/auth/session.ts only: claracore comes back
  const lost = /Kept through the compaction \(its summary left them out\):((?:\\n- [^\\]*)+)/.exec(text);
  if (!lost || !/- claracore \(/.test(lost[1]) || /session\.ts/.test(lost[1]))
    fail('the block after /compact does not re-inject exactly what the summary lost (PostCompact)', text.slice(0, 4000));
  ok('after /compact the model sees the summary, the re-injected block and the new turn\'s block, with the items the summary lost');
}

// ---- 4. the /clarity slash command ------------------------------------------
step = '/clarity scores';
{
  const n = messageRequests().length;
  claudeP('/clarity scores', ['--resume', sid]);
  const reqs = messageRequests().slice(n);
  const seen = reqs.find((r) => bodyText(r).includes(`Clarity scores, session ${sid}`));
  if (!seen) fail('the output of `clarity cmd "/clarity scores"` did not reach the model', reqs.map(bodyText).join('\n').slice(-3000));
  if (!bodyText(seen).includes('file:src/auth/session.ts')) fail('the /clarity scores table lacks the file', bodyText(seen).slice(-3000));
  ok('/clarity scores ran clarity cmd for this session and its table reached the model');
}

step = 'uninstall';
{
  const r = run(clarity, ['install', 'claude-code', '--project', proj, '--uninstall']);
  if (r.status !== 0) fail(`exit status ${r.status}`, r.stderr + r.stdout);
  const s = fs.readFileSync(path.join(proj, '.claude', 'settings.json'), 'utf8');
  if (s.includes(clarity)) fail('clarity hooks left after --uninstall', s);
  ok('clarity install --uninstall removed the hooks and the command');
}

mock.kill('SIGTERM');
if (!keep) fs.rmSync(tmp, { recursive: true, force: true });
console.log('e2e-claude-code: all checks passed');
