/**
 * Main-area views: a run (step timeline with attempts, output previews, errors, the cost
 * meter, and the lil-tui actions with confirmation) and a splice proposal (a unified and a
 * side-by-side diff with apply / reject).
 */
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { IProposal, IRunDetail, api, el } from './api';
import { approvalCard } from './sidebar';

const ACTIONS: [string, string, string][] = [
  ['resume', 'Resume', 'Continue the run in a new process: journaled steps replay.'],
  ['retry', 'Retry dead letter', 'Give the dead-lettered step new attempts.'],
  ['budget', 'Raise budget', 'Set a new budget in US dollars.'],
  ['cancel', 'Cancel', 'Stop the run for good: it stops at its next journal write.'],
  ['reset', 'Reset', 'Start over: the next call runs every step again.']
];

export class RunView extends Widget {
  constructor(readonly runId: string) {
    super();
    this.addClass('lil-run-view');
    this.id = `lil-run-${runId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    this.title.label = runId;
    this.title.closable = true;
    void this.refresh();
  }

  async refresh(): Promise<void> {
    try {
      this.render(await api.run(this.runId));
    } catch (e) {
      this.node.replaceChildren(el('div', 'lil-error', String(e)));
    }
  }

  private render(d: IRunDetail): void {
    const r = d.run;
    const head = el('div', 'lil-run-view-head');
    head.append(
      el('h2', 'lil-run-view-title', r.run_id),
      el('span', `lil-badge lil-badge-${r.status}`, r.status)
    );
    const meter = el('div', 'lil-cost-meter');
    const spent = r.cost_micros;
    const budget = r.budget?.usd_micros ?? null;
    meter.append(
      el('span', 'lil-steps', `${r.shown.steps} steps`),
      el('span', 'lil-duration', r.shown.duration),
      el('span', 'lil-cost', `cost ${r.shown.cost}`),
      el('span', 'lil-budget', r.budget ? ` of ${r.shown.budget}` : '')
    );
    if (budget) {
      const bar = el('div', 'lil-cost-bar');
      const fill = el('div', 'lil-cost-fill');
      fill.style.width = `${Math.min(100, (100 * spent) / budget)}%`;
      bar.appendChild(fill);
      meter.appendChild(bar);
    }
    const actions = el('div', 'lil-actions');
    for (const [action, label, why] of ACTIONS) {
      if (!r.actions.includes(action)) {
        continue; // the server says which actions apply to this run now, as every surface does
      }
      const button = el('button', `lil-action lil-action-${action} jp-mod-styled`, label);
      button.title = why;
      button.onclick = () => this.act(action, label, why);
      actions.appendChild(button);
    }
    const parts: HTMLElement[] = [head, meter, actions];
    if (r.error) {
      const error = el('pre', 'lil-run-error', `${r.error.type}: ${r.error.message}`);
      if (r.error.fix) {
        error.textContent += `\nfix: ${r.error.fix}`;
      }
      parts.push(error);
    }
    for (const a of d.approvals) {
      parts.push(approvalCard(a, () => this.refresh()));
    }
    for (const e of d.effects) {
      const row = el('div', 'lil-effect', `side effect in doubt: ${e.marker} (position ${e.position})`);
      for (const res of ['done', 'redo']) {
        const b = el('button', `lil-resolve-${res} jp-mod-styled`, `it was ${res === 'done' ? 'done' : 'not done: redo'}`);
        b.onclick = async () => {
          await this.run(() => api.resolve(r.run_id, e.position, res));
        };
        row.appendChild(b);
      }
      parts.push(row);
    }
    const timeline = el('ol', 'lil-timeline');
    for (const s of d.steps) {
      const item = el('li', `lil-step lil-status-${s.status}`);
      item.dataset.position = String(s.position);
      const title = el('div', 'lil-step-title');
      title.append(
        el('span', 'lil-step-name', `${s.position}. ${s.name}`),
        el('span', `lil-badge lil-badge-${s.status}`, s.status),
        el('span', 'lil-step-kind', s.kind)
      );
      item.appendChild(title);
      for (const a of d.attempts.filter(a => a.position === s.position)) {
        const attempt = el('div', `lil-attempt lil-status-${a.status}`);
        attempt.append(
          el('span', 'lil-attempt-n', `attempt ${a.attempt}`),
          el('span', 'lil-attempt-time', a.ended ? a.shown.duration : ''),
          el('span', 'lil-attempt-cost', a.cost_micros ? a.shown.cost : '')
        );
        if (a.preview) {
          attempt.appendChild(el('pre', 'lil-preview', a.preview));
        }
        if (a.error) {
          attempt.appendChild(el('pre', 'lil-attempt-error', `${a.error.type}: ${a.error.message}`));
        }
        item.appendChild(attempt);
      }
      timeline.appendChild(item);
    }
    if (!d.steps.length) {
      timeline.appendChild(el('li', 'lil-empty', 'no steps journaled in this epoch yet'));
    }
    parts.push(timeline);
    if (d.result !== null) {
      parts.push(el('h3', '', 'result'), el('pre', 'lil-result', d.result.preview));
    }
    if (d.board.length) {
      // the run's blackboard: each key at its newest version (values previewed, never decoded)
      const board = el('table', 'lil-board');
      for (const k of d.board) {
        const row = el('tr', 'lil-board-key');
        row.append(
          el('td', 'lil-board-name', `${k.pinned ? '📌 ' : ''}${k.key}`),
          el('td', 'lil-board-version', `v${k.version}`),
          el('td', 'lil-board-tags', k.tags.join(', ')),
          el('td', 'lil-board-by', k.by ?? ''),
          el('td', 'lil-board-preview', k.preview)
        );
        board.appendChild(row);
      }
      parts.push(el('h3', '', 'blackboard'), board);
    }
    for (const c of d.conversations) {
      const thread = el('ol', 'lil-conversation');
      for (const t of c.turns) {
        const who = t.kind === 'handoff' ? `${t.agent} → ${t.to ?? '?'}` : t.agent;
        thread.appendChild(el('li', `lil-turn lil-turn-${t.kind}`, `${who}: ${t.text}`));
      }
      parts.push(el('h3', '', `conversation ${c.name}`), thread);
    }
    this.node.replaceChildren(...parts);
  }

  private async act(action: string, label: string, why: string): Promise<void> {
    let extra: any = {};
    let body: Widget | string = `${why}\n\nRun: ${this.runId}`;
    const dollars = el('input', 'lil-dollars');
    if (action === 'budget') {
      dollars.type = 'number';
      dollars.value = '1';
      const w = new Widget();
      w.node.append(el('p', '', why), dollars);
      body = w;
    }
    const answer = await showDialog({
      title: `${label} ${this.runId}?`,
      body,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label })]
    });
    if (!answer.button.accept) {
      return;
    }
    if (action === 'budget') {
      extra = { dollars: Number(dollars.value) };
    }
    await this.run(() => api.action(this.runId, action, extra));
  }

  private async run(call: () => Promise<{ message: string }>): Promise<void> {
    try {
      Notification.success((await call()).message, { autoClose: 4000 });
    } catch (e: any) {
      Notification.error(e.fix ? `${e.message} (fix: ${e.fix})` : e.message);
    }
    await this.refresh();
  }
}

export class SpliceView extends Widget {
  constructor(readonly proposal: IProposal, done: () => void) {
    super();
    const p = proposal;
    this.addClass('lil-splice-view');
    this.id = `lil-splice-${p.id}`;
    this.title.label = `splice ${p.target}`;
    this.title.closable = true;
    const head = el('div', 'lil-splice-head');
    head.append(
      el('h2', '', `${p.target} in ${p.path}`),
      el('div', 'lil-splice-reason', p.reason ? `why: ${p.reason}` : ''),
      el('div', 'lil-splice-by', `proposed by ${p.by}`)
    );
    const unified = el('pre', 'lil-diff');
    for (const line of p.diff.split('\n')) {
      const cls = line.startsWith('+') ? 'lil-add' : line.startsWith('-') ? 'lil-del' : '';
      unified.appendChild(el('div', `lil-diff-line ${cls}`, line || ' '));
    }
    const sides = el('div', 'lil-side-by-side');
    sides.append(el('pre', 'lil-old', p.old), el('pre', 'lil-new', p.code));
    const comment = el('input', 'lil-splice-comment');
    comment.placeholder = 'comment (for a rejection)';
    const message = el('div', 'lil-splice-message');
    const decide = async (verb: 'apply' | 'reject') => {
      try {
        const answer = await api.splice(p.id, verb, comment.value || undefined);
        message.textContent = answer.message;
        Notification.success(answer.message, { autoClose: 4000 });
        this.node.querySelectorAll('button').forEach(b => ((b as HTMLButtonElement).disabled = true));
        done();
      } catch (e: any) {
        message.textContent = e.fix ? `${e.message}\nfix: ${e.fix}` : e.message;
      }
    };
    const apply = el('button', 'lil-splice-apply jp-mod-styled jp-mod-accept', 'Apply');
    apply.onclick = () => decide('apply');
    const reject = el('button', 'lil-splice-reject jp-mod-styled jp-mod-warn', 'Reject');
    reject.onclick = () => decide('reject');
    const buttons = el('div', 'lil-splice-buttons');
    buttons.append(apply, reject, comment);
    this.node.append(head, buttons, message, unified, sides);
  }
}
