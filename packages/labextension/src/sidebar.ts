/**
 * The letitloop sidebar: runs of this journal (live status, current step, cost, waiting
 * badges; filter and search), the approvals inbox (approve / reject with a comment and a
 * schema-checked payload edit), pending splice proposals, and the queues with their workers
 * (queues.ts). Every list re-reads the server when a relayed journal event says something
 * changed; the queues section also every few seconds (heartbeats are not journal events).
 */
import { Notification } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { IApproval, IProposal, IRun, api, el } from './api';
import { renderFleet } from './queues';

export type Section = 'runs' | 'inbox' | 'splices' | 'queues';

export interface ISidebarOptions {
  openRun: (runId: string) => void;
  openSplice: (proposal: IProposal) => void;
  onWaiting: (count: number) => void;
}

export class LilSidebar extends Widget {
  constructor(private options: ISidebarOptions) {
    super();
    this.id = 'letitloop-sidebar';
    this.addClass('lil-sidebar');
    this.title.caption = 'letitloop runs';
    const tabs = el('div', 'lil-tabs');
    for (const section of ['runs', 'inbox', 'splices', 'queues'] as Section[]) {
      const button = el('button', `lil-tab lil-tab-${section}`, section);
      button.onclick = () => this.showSection(section);
      tabs.appendChild(button);
    }
    const filters = el('div', 'lil-filters');
    this.search.placeholder = 'search runs';
    this.search.className = 'lil-search';
    this.search.oninput = () => this.refresh();
    for (const s of [
      '',
      'running',
      'suspended',
      'failed',
      'interrupted',
      'completed'
    ]) {
      const option = el('option', '', s || 'all statuses');
      option.value = s;
      this.status.appendChild(option);
    }
    this.status.className = 'lil-status-filter';
    this.status.onchange = () => this.refresh();
    filters.append(this.search, this.status);
    this.runsNode.append(filters, this.runList);
    this.node.append(tabs, this.runsNode, this.inboxNode, this.splicesNode, this.queuesNode);
    this.showSection('runs');
    this.ticker = window.setInterval(() => {
      if (this.section === 'queues' && this.isVisible) {
        void this.refresh();
      }
    }, 3000);
  }

  dispose(): void {
    window.clearInterval(this.ticker);
    super.dispose();
  }

  showSection(section: Section): void {
    this.section = section;
    this.runsNode.hidden = section !== 'runs';
    this.inboxNode.hidden = section !== 'inbox';
    this.splicesNode.hidden = section !== 'splices';
    this.queuesNode.hidden = section !== 'queues';
    this.node.querySelectorAll('.lil-tab').forEach(b => {
      b.classList.toggle('lil-active', b.classList.contains(`lil-tab-${section}`));
    });
    void this.refresh();
  }

  /** Re-read what the open section shows, and the inbox count (coalesced: one at a time). */
  async refresh(): Promise<void> {
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    try {
      do {
        this.again = false;
        const { runs, waiting } = await api.runs(
          this.status.value,
          this.search.value
        );
        this.renderRuns(runs);
        this.options.onWaiting(waiting);
        const inboxTab = this.node.querySelector('.lil-tab-inbox');
        if (inboxTab) {
          inboxTab.textContent = waiting ? `inbox (${waiting})` : 'inbox';
        }
        if (this.section === 'inbox') {
          this.renderInbox((await api.approvals()).approvals);
        } else if (this.section === 'splices') {
          this.renderSplices((await api.splices()).proposals);
        } else if (this.section === 'queues') {
          const fleet = await api.queues();
          this.queuesNode.replaceChildren(...renderFleet(fleet, this.options.openRun));
        }
      } while (this.again);
    } catch (e) {
      this.runList.replaceChildren(el('div', 'lil-error', String(e)));
    } finally {
      this.busy = false;
    }
  }

  private renderRuns(runs: IRun[]): void {
    if (!runs.length) {
      this.runList.replaceChildren(el('div', 'lil-empty', 'no runs yet'));
      return;
    }
    this.runList.replaceChildren(
      ...runs.map(r => {
        const row = el('div', `lil-run lil-status-${r.status}`);
        row.dataset.runId = r.run_id;
        row.title = r.run_id;
        const head = el('div', 'lil-run-head');
        head.append(
          el('span', 'lil-run-workflow', r.workflow),
          el('span', `lil-badge lil-badge-${r.status}`, r.status)
        );
        if (r.waiting) {
          head.append(el('span', 'lil-badge lil-badge-waiting', `waiting ${r.waiting}`));
        }
        const meta = el('div', 'lil-run-meta');
        meta.append(
          el('span', 'lil-run-steps', `${r.shown.steps} steps`),
          el('span', 'lil-run-current', r.current_step ? `at ${r.current_step}` : ''),
          el('span', 'lil-run-duration', r.shown.duration),
          el('span', 'lil-run-cost', r.shown.cost)
        );
        row.append(head, el('div', 'lil-run-id', r.run_id), meta);
        row.onclick = () => this.options.openRun(r.run_id);
        return row;
      })
    );
  }

  private renderInbox(rows: IApproval[]): void {
    if (!rows.length) {
      this.inboxNode.replaceChildren(el('div', 'lil-empty', 'nothing waits for you'));
      return;
    }
    this.inboxNode.replaceChildren(...rows.map(a => approvalCard(a, () => this.refresh())));
  }

  private renderSplices(rows: IProposal[]): void {
    if (!rows.length) {
      this.splicesNode.replaceChildren(el('div', 'lil-empty', 'no splice proposals'));
      return;
    }
    this.splicesNode.replaceChildren(
      ...rows.map(p => {
        const row = el('div', 'lil-splice');
        row.dataset.proposalId = p.id;
        row.append(
          el('div', 'lil-splice-target', `${p.target} in ${p.path.split('/').pop()}`),
          el('div', 'lil-splice-reason', p.reason || `proposed by ${p.by}`)
        );
        row.onclick = () => this.options.openSplice(p);
        return row;
      })
    );
  }

  readonly search = el('input');
  readonly status = el('select');
  private runsNode = el('div', 'lil-section lil-runs');
  private runList = el('div', 'lil-run-list');
  private inboxNode = el('div', 'lil-section lil-inbox');
  private splicesNode = el('div', 'lil-section lil-splices');
  private queuesNode = el('div', 'lil-section lil-queues');
  private ticker = 0;
  private section: Section = 'runs';
  private busy = false;
  private again = false;
}

/** One approval request: its payload (editable when it has a schema), a comment, decisions. */
export function approvalCard(a: IApproval, done: () => void): HTMLElement {
  const card = el('div', 'lil-approval-card');
  card.dataset.approvalId = a.id;
  card.append(
    el('div', 'lil-approval-name', a.name),
    el('div', 'lil-approval-run', a.run_id)
  );
  const payload = el('textarea', 'lil-approval-payload');
  payload.value = JSON.stringify(a.payload, null, 2);
  payload.readOnly = !a.schema;
  payload.rows = Math.min(8, payload.value.split('\n').length + 1);
  const comment = el('input', 'lil-approval-comment');
  comment.placeholder = 'comment (optional)';
  const message = el('div', 'lil-approval-message');
  const decide = async (approved: boolean) => {
    const body: any = { approved, comment: comment.value || null };
    if (a.schema && payload.value !== JSON.stringify(a.payload, null, 2)) {
      try {
        body.payload = JSON.parse(payload.value);
      } catch (e) {
        message.textContent = `the payload is not JSON: ${e}`;
        return;
      }
    }
    try {
      const answer = await api.decide(a.id, body);
      Notification.success(answer.message, { autoClose: 3000 });
      done();
    } catch (e: any) {
      message.textContent = e.fix ? `${e.message} (fix: ${e.fix})` : e.message;
    }
  };
  const approve = el('button', 'lil-approve jp-mod-styled jp-mod-accept', 'Approve');
  approve.onclick = () => decide(true);
  const reject = el('button', 'lil-reject jp-mod-styled jp-mod-warn', 'Reject');
  reject.onclick = () => decide(false);
  const buttons = el('div', 'lil-approval-buttons');
  buttons.append(approve, reject);
  card.append(payload, comment, buttons, message);
  return card;
}
