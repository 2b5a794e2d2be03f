/**
 * How the extension starts `lil lsp` and reads its runs tree, with no `vscode` import, so the
 * test runner (test/client.test.js) drives the real server through exactly this code.
 */
import * as fs from 'fs';
import * as path from 'path';

export interface IServerSettings {
  interpreter: string; // empty: the workspace's .venv, else python3
  journal: string; // empty: found from the workspace
}

/** The workspace's interpreter: the setting, else <folder>/.venv/bin/python, else python3. */
export function interpreterFor(settings: IServerSettings, folder: string | undefined): string {
  if (settings.interpreter) {
    return settings.interpreter;
  }
  if (folder) {
    for (const candidate of ['.venv/bin/python', 'venv/bin/python', '.venv/Scripts/python.exe']) {
      const full = path.join(folder, candidate);
      if (fs.existsSync(full)) {
        return full;
      }
    }
  }
  return process.platform === 'win32' ? 'python' : 'python3';
}

/** `python -m letitloop lsp [--journal PATH]`: the command line of the language server. */
export function serverCommand(
  settings: IServerSettings,
  folder: string | undefined
): { command: string; args: string[] } {
  const args = ['-m', 'letitloop', 'lsp'];
  if (settings.journal) {
    args.push('--journal', settings.journal);
  }
  return { command: interpreterFor(settings, folder), args };
}

/** A run as every surface's JSON writes it (operate's run shape; the fields the tree uses). */
export interface ITreeRun {
  run_id: string;
  workflow: string;
  status: string;
  steps_done: number;
  current_step: string | null;
  cost_micros: number;
  /** its numbers written by the server's rules, as every other surface shows them */
  shown: { steps: string; duration: string; cost: string; budget: string; current: string };
}

export interface ITreeApproval {
  id: string;
  run_id: string;
  name: string;
  payload: unknown;
}

export interface ITree {
  runs: ITreeRun[];
  approvals: ITreeApproval[];
}

/** Anything that can send `workspace/executeCommand` (the LanguageClient, or a bare
 * JSON-RPC connection in the test runner). */
export interface ICommandSender {
  sendRequest(method: string, params: unknown): Promise<unknown>;
}

export async function readTree(client: ICommandSender): Promise<ITree> {
  const answer = (await client.sendRequest('workspace/executeCommand', {
    command: 'letitloop.runsTree',
    arguments: [200]
  })) as ITree | null;
  return answer ?? { runs: [], approvals: [] };
}

export async function decide(
  client: ICommandSender,
  approvalId: string,
  approved: boolean
): Promise<{ approval: string; status: string }> {
  return (await client.sendRequest('workspace/executeCommand', {
    command: approved ? 'letitloop.approve' : 'letitloop.reject',
    arguments: [approvalId]
  })) as { approval: string; status: string };
}

/** A run's line in the tree: status, steps done/known, the current step and the cost, the
 * numbers as the server wrote them (``shown``), so the tree reads as `lil runs list` does. */
export function describeRun(r: ITreeRun): string {
  const at = r.current_step ? ` · at ${r.current_step}` : '';
  return `${r.status} · ${r.shown.steps} steps${at} · ${r.shown.cost}`;
}
