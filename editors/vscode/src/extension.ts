/**
 * The letitloop VS Code extension: a language client for `lil lsp` (diagnostics, hovers, code
 * lenses and code actions come from the server as they are) and a "letitloop runs" tree fed
 * by the server's `letitloop.runsTree` command, with approve / reject on pending approvals.
 */
import * as vscode from 'vscode';
import { LanguageClient, LanguageClientOptions, ServerOptions } from 'vscode-languageclient/node';

import { ITree, decide, describeRun, readTree, serverCommand } from './server';

let client: LanguageClient | undefined;

type Node =
  | { kind: 'group'; label: string; children: Node[] }
  | { kind: 'run'; run: ITree['runs'][number] }
  | { kind: 'approval'; approval: ITree['approvals'][number] };

class RunsTree implements vscode.TreeDataProvider<Node> {
  private changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private tree: ITree = { runs: [], approvals: [] };

  async refresh(): Promise<void> {
    if (client) {
      try {
        this.tree = await readTree(client);
      } catch (e) {
        void vscode.window.showWarningMessage(`letitloop: ${e}`);
      }
    }
    this.changed.fire(undefined);
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'group') {
      return new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
    }
    if (node.kind === 'approval') {
      const a = node.approval;
      const item = new vscode.TreeItem(`${a.name} (${a.run_id})`);
      item.contextValue = 'approval';
      item.description = 'waiting for approval';
      item.tooltip = JSON.stringify(a.payload, null, 2);
      item.iconPath = new vscode.ThemeIcon('bell');
      return item;
    }
    const r = node.run;
    const item = new vscode.TreeItem(r.run_id);
    item.description = describeRun(r);
    item.contextValue = 'run';
    item.iconPath = new vscode.ThemeIcon(
      r.status === 'completed' ? 'pass' : r.status === 'failed' ? 'error' : 'sync'
    );
    return item;
  }

  getChildren(node?: Node): Node[] {
    if (node?.kind === 'group') {
      return node.children;
    }
    if (node) {
      return [];
    }
    const groups: Node[] = [];
    if (this.tree.approvals.length) {
      groups.push({
        kind: 'group',
        label: `approvals (${this.tree.approvals.length})`,
        children: this.tree.approvals.map(approval => ({ kind: 'approval', approval }))
      });
    }
    groups.push({
      kind: 'group',
      label: `runs (${this.tree.runs.length})`,
      children: this.tree.runs.map(run => ({ kind: 'run', run }))
    });
    return groups;
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const config = vscode.workspace.getConfiguration('letitloop');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const { command, args } = serverCommand(
    { interpreter: config.get('interpreter', ''), journal: config.get('journal', '') },
    folder
  );
  const serverOptions: ServerOptions = { command, args, options: { cwd: folder } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { notebook: '*', language: 'python' }
    ]
  };
  client = new LanguageClient('letitloop', 'letitloop (lil lsp)', serverOptions, clientOptions);
  await client.start();
  const tree = new RunsTree();
  context.subscriptions.push(
    vscode.window.registerTreeDataProvider('letitloopRuns', tree),
    vscode.commands.registerCommand('letitloop.tree.refresh', () => tree.refresh()),
    vscode.commands.registerCommand('letitloop.tree.approve', async (node: Node) => {
      if (client && node.kind === 'approval') {
        await decide(client, node.approval.id, true);
        await tree.refresh();
      }
    }),
    vscode.commands.registerCommand('letitloop.tree.reject', async (node: Node) => {
      if (client && node.kind === 'approval') {
        await decide(client, node.approval.id, false);
        await tree.refresh();
      }
    }),
    // the server re-publishes diagnostics when the journal changes: refresh the tree with them
    vscode.languages.onDidChangeDiagnostics(() => void tree.refresh())
  );
  await tree.refresh();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
