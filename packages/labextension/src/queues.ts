/**
 * The sidebar's queues section: each queue (queued, running, held by its caller, the oldest
 * wait, paused), each worker (pid@host, state, the runs it holds, its heartbeat's age) and the
 * orphaned runs no worker takes over, each with the command that resumes it. Read from
 * operate's fleet view (``GET /lil/api/queues``), the same as ``lil queue list --json``.
 */
import { IFleet, el } from './api';

/** The section's content for one answer of the server. */
export function renderFleet(
  fleet: IFleet,
  openRun: (runId: string) => void
): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (!fleet.queues.length) {
    out.push(el('div', 'lil-empty', 'no queue yet: Queue(name).enqueue(...) makes one'));
  }
  for (const q of fleet.queues) {
    const row = el('div', `lil-queue${q.paused ? ' lil-queue-paused' : ''}`);
    row.dataset.queue = q.name;
    const head = el('div', 'lil-run-head');
    head.append(
      el('span', 'lil-queue-name', q.name),
      el('span', `lil-badge lil-badge-${q.paused ? 'suspended' : 'running'}`, q.paused ? 'paused' : 'active')
    );
    const meta = el('div', 'lil-run-meta');
    meta.append(
      el('span', 'lil-queue-depth', `${q.queued} queued`),
      el('span', 'lil-queue-running', `${q.running} running`),
      el('span', 'lil-queue-held', `${q.held} held`),
      el('span', 'lil-queue-oldest', q.oldest_shown ? `oldest ${q.oldest_shown}` : '')
    );
    row.append(head, meta, el('div', 'lil-run-id', q.limits_shown));
    out.push(row);
  }
  out.push(el('div', 'lil-subhead', fleet.workers.length ? 'workers' : 'no worker: `lil worker` starts one'));
  for (const w of fleet.workers) {
    const row = el('div', `lil-worker lil-status-${w.state}`);
    row.dataset.worker = w.worker;
    const head = el('div', 'lil-run-head');
    head.append(
      el('span', 'lil-worker-name', w.worker),
      el('span', `lil-badge lil-badge-${w.state === 'lapsed' ? 'failed' : 'running'}`, w.state)
    );
    const meta = el('div', 'lil-run-meta');
    meta.append(
      el('span', 'lil-worker-host', w.host),
      el('span', 'lil-worker-runs', `${w.runs.length} in hand`),
      el('span', 'lil-worker-beat', `heartbeat ${w.heartbeat_shown}`)
    );
    row.append(head, meta);
    for (const runId of w.runs) {
      const run = el('div', 'lil-worker-run lil-run-id', runId);
      run.dataset.runId = runId;
      run.onclick = () => openRun(runId);
      row.append(run);
    }
    out.push(row);
  }
  if (fleet.orphans.length) {
    out.push(el('div', 'lil-subhead', `orphaned runs (${fleet.orphans.length}): no worker takes them over`));
    for (const o of fleet.orphans) {
      const row = el('div', 'lil-orphan');
      row.dataset.runId = o.run_id;
      row.append(
        el('div', 'lil-run-workflow', o.workflow),
        el('div', 'lil-run-id', o.run_id),
        el('code', 'lil-orphan-command', o.command)
      );
      row.onclick = () => openRun(o.run_id);
      out.push(row);
    }
  }
  return out;
}
