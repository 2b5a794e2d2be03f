/**
 * %%durable cells marked in the notebook: a badge on each cell with its run's status
 * (replayed, running, waiting, failed, ...) that opens the run view. The server maps a
 * cell's `%%durable NAME [--run-id KEY]` line and the notebook's path to the run id the magic
 * uses; badges refresh when a cell runs and when a relayed event concerns one of their runs.
 */
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

import { api, el } from './api';

const MAGIC = /^%%durable\s+([A-Za-z_][A-Za-z0-9_]*)(.*)$/;

export interface IDurableCell {
  name: string;
  key: string;
}

/** The name and run key of a `%%durable` cell's first line, or null for any other cell. */
export function parseMagic(source: string): IDurableCell | null {
  const first = source.split('\n', 1)[0].trim();
  const match = MAGIC.exec(first);
  if (!match) {
    return null;
  }
  const key = /--run-id(?:=|\s+)(\S+)/.exec(match[2]);
  return { name: match[1], key: key ? key[1] : '' };
}

export class CellBadges {
  constructor(
    tracker: INotebookTracker,
    private openRun: (runId: string) => void
  ) {
    tracker.widgetAdded.connect((_, panel) => this.watch(panel));
    NotebookActions.executed.connect((_, { notebook }) => {
      const panel = notebook.parent as NotebookPanel | null;
      if (panel) {
        this.schedule(panel, 300);
      }
    });
  }

  /** A journal event of one of the badges' runs: refresh the notebook showing it. */
  onEvent(runId: string): void {
    for (const [panel, runs] of this.runs) {
      if (runs.has(runId) || runId === '') {
        this.schedule(panel, 150);
      }
    }
  }

  private watch(panel: NotebookPanel): void {
    void panel.context.ready.then(() => this.schedule(panel, 0));
    panel.content.model?.contentChanged.connect(() => this.schedule(panel, 800));
    panel.disposed.connect(() => this.runs.delete(panel));
  }

  private schedule(panel: NotebookPanel, delay: number): void {
    clearTimeout(this.timers.get(panel));
    this.timers.set(panel, window.setTimeout(() => void this.refresh(panel), delay));
  }

  private async refresh(panel: NotebookPanel): Promise<void> {
    if (panel.isDisposed) {
      return;
    }
    const cells = panel.content.widgets
      .filter(c => c.model.type === 'code')
      .map(c => ({ cell: c, magic: parseMagic(c.model.sharedModel.getSource()) }));
    const durable = cells.filter(c => c.magic);
    for (const { cell, magic } of cells) {
      if (!magic) {
        cell.node.querySelector('.lil-cell-badge')?.remove();
        cell.removeClass('lil-durable-cell');
      }
    }
    if (!durable.length) {
      this.runs.set(panel, new Set());
      return;
    }
    const names = durable.map(c => c.magic!.name);
    const keys = durable.map(c => c.magic!.key);
    let found;
    try {
      found = (await api.cells(panel.context.path, names, keys)).cells;
    } catch {
      return;
    }
    const runs = new Set<string>();
    for (const { cell, magic } of durable) {
      const info = found[magic!.name];
      if (!info) {
        continue;
      }
      runs.add(info.run_id);
      cell.addClass('lil-durable-cell');
      let badge = cell.node.querySelector('.lil-cell-badge') as HTMLElement | null;
      if (!badge) {
        badge = el('button', 'lil-cell-badge');
        cell.node.appendChild(badge);
      }
      const status = info.status || 'not run';
      badge.className = `lil-cell-badge lil-badge lil-badge-${status.replace(' ', '-')}`;
      badge.textContent = `durable · ${status}`;
      badge.title = `${info.run_id}: open the run view`;
      badge.dataset.runId = info.run_id;
      badge.onclick = () => this.openRun(info.run_id);
    }
    this.runs.set(panel, runs);
  }

  private runs = new Map<NotebookPanel, Set<string>>();
  private timers = new Map<NotebookPanel, number>();
}
