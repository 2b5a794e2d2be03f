// The extension's client code against the real `lil lsp`, without VS Code: the server is
// started by out/server.js's serverCommand (the same call the extension makes) and spoken to
// over vscode-jsonrpc (the transport vscode-languageclient uses). It checks diagnostics on a
// durable function, the runs tree, and approving a pending approval.
// Environment: LIL_PYTHON (interpreter), LIL_JOURNAL (journal), LIL_WORKSPACE (a folder).
'use strict';
const assert = require('assert');
const cp = require('child_process');
const fs = require('fs');
const path = require('path');
const rpc = require('vscode-jsonrpc/node');
const { serverCommand, readTree, decide, describeRun } = require('../out/server');

const folder = process.env.LIL_WORKSPACE;
const { command, args } = serverCommand(
  { interpreter: process.env.LIL_PYTHON, journal: process.env.LIL_JOURNAL },
  folder
);
const proc = cp.spawn(command, args, { cwd: folder, stdio: ['pipe', 'pipe', 'inherit'] });
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(proc.stdout),
  new rpc.StreamMessageWriter(proc.stdin)
);
const diagnostics = new Map();
conn.onNotification('textDocument/publishDiagnostics', p => diagnostics.set(p.uri, p.diagnostics));
conn.onNotification('window/showMessage', () => {});
conn.onNotification('window/logMessage', () => {});
conn.onRequest('workspace/configuration', () => []);
conn.onRequest('client/registerCapability', () => null);
conn.onRequest('workspace/codeLens/refresh', () => null);
conn.onRequest('workspace/diagnostic/refresh', () => null);
conn.listen();

const timeout = (ms, what) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms));

async function waitFor(check, what, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out: ${what}`);
    }
    await new Promise(r => setTimeout(r, 100));
  }
}

async function main() {
  const rootUri = 'file://' + folder;
  await Promise.race([
    conn.sendRequest('initialize', {
      processId: process.pid,
      rootUri,
      workspaceFolders: [{ uri: rootUri, name: 'ws' }],
      capabilities: { textDocument: { publishDiagnostics: {}, hover: {} }, workspace: {} }
    }),
    timeout(60000, 'initialize')
  ]);
  conn.sendNotification('initialized', {});
  const file = path.join(folder, 'clock.py');
  const uri = 'file://' + file;
  conn.sendNotification('textDocument/didOpen', {
    textDocument: { uri, languageId: 'python', version: 1, text: fs.readFileSync(file, 'utf8') }
  });
  const found = await waitFor(
    () => (diagnostics.get(uri) || []).find(d => d.code === 'LIL001'),
    'LIL001 diagnostic'
  );
  const tree = await waitFor(async () => {
    const t = await readTree(conn);
    return t.approvals.length ? t : null;
  }, 'a pending approval in the runs tree');
  const [approval] = tree.approvals;
  const answer = await decide(conn, approval.id, true);
  assert.strictEqual(answer.status, 'approved');
  const after = await readTree(conn);
  console.log(
    JSON.stringify({
      diagnostic: { code: found.code, message: found.message, line: found.range.start.line },
      runs: tree.runs.map(r => [r.run_id, r.status]),
      described: tree.runs.map(r => describeRun(r)),
      approval: { id: approval.id, name: approval.name, run_id: approval.run_id },
      decided: answer.status,
      pending_after: after.approvals.length
    })
  );
  await conn.sendRequest('shutdown');
  conn.sendNotification('exit');
}

main().then(
  () => setTimeout(() => process.exit(0), 200),
  e => {
    console.error(e);
    proc.kill();
    process.exit(1);
  }
);
