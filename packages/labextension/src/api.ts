/**
 * The one module that talks to the letitloop server extension: typed REST calls under
 * /lil/api/ (Jupyter's token and XSRF are added by ServerConnection) and the journal events
 * the server relays on Jupyter's event bus.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { Event, ServerConnection } from '@jupyterlab/services';

export const EVENT_SCHEMA = 'https://letitloop.dev/events/journal';

/** A run as the server writes it (letitloop.operate.run_json): ``shown`` holds its numbers
 * formatted as every surface writes them, ``actions`` what a person may do to it now. */
export interface IRun {
  run_id: string;
  workflow: string;
  status: string;
  steps_done: number;
  steps_total: number;
  current_step: string | null;
  cost_micros: number;
  tokens: number;
  created: number;
  updated: number;
  waiting: number;
  error: IError | null;
  budget: { usd_micros: number | null; tokens: number | null } | null;
  dead_letter: boolean;
  actions: string[];
  shown: {
    steps: string;
    duration: string;
    cost: string;
    budget: string;
    current: string;
  };
}

export interface IError {
  type?: string;
  title?: string;
  message?: string;
  fix?: string;
  traceback?: string;
  dead?: boolean;
}

export interface IAttempt {
  position: number;
  attempt: number;
  kind: string;
  name: string;
  status: string;
  started: number | null;
  ended: number | null;
  preview: string | null;
  error: IError | null;
  cost_micros: number;
  resolution: string | null;
  shown: { duration: string; cost: string };
}

export interface IStep {
  position: number;
  name: string;
  kind: string;
  status: string;
  tries: number;
  shown: { duration: string; cost: string };
}

export interface IApproval {
  id: string;
  run_id: string;
  name: string;
  payload: any;
  schema: any;
  created: number;
  status: string;
}

export interface IEffect {
  run_id: string;
  position: number;
  marker: string;
  why: string;
}

export interface IBoardKey {
  key: string;
  version: number;
  versions: number;
  tags: string[];
  pinned: boolean;
  by: string | null;
  preview: string;
}

export interface ITurn {
  version: number;
  agent: string;
  role: string | null;
  kind: string;
  to: string | null;
  text: string;
}

export interface IConversation {
  name: string;
  turns: ITurn[];
}

export interface IRunDetail {
  run: IRun;
  steps: IStep[];
  attempts: IAttempt[];
  result: { codec: string; preview: string } | null;
  approvals: IApproval[];
  effects: IEffect[];
  board: IBoardKey[];
  conversations: IConversation[];
}

export interface IProposal {
  id: string;
  path: string;
  target: string;
  old: string;
  code: string;
  diff: string;
  reason: string;
  by: string;
  state: string;
  note: string | null;
}

export interface IJournalEvent {
  seq: number;
  run_id: string;
  kind: string;
  position?: number;
  name?: string;
}

/** An error answer of the server extension: its message and the fix it suggests. */
export class LilError extends Error {
  constructor(
    message: string,
    readonly fix?: string
  ) {
    super(message);
  }
}

/** Queues, workers and orphans as operate's ``fleet_json`` writes them. */
export interface IFleet {
  queues: {
    name: string;
    paused: boolean;
    queued: number;
    running: number;
    held: number;
    oldest_shown: string | null;
    limits_shown: string;
  }[];
  workers: {
    worker: string;
    host: string;
    pid: number;
    state: string;
    runs: string[];
    heartbeat_shown: string;
  }[];
  orphans: { run_id: string; workflow: string; command: string; resumable: boolean }[];
}

export async function request<T>(
  path: string,
  init: RequestInit = {},
  query: Record<string, string | string[]> = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    for (const one of Array.isArray(v) ? v : [v]) {
      params.append(k, one);
    }
  }
  const qs = params.toString();
  const url =
    URLExt.join(settings.baseUrl, 'lil', 'api', path) + (qs ? `?${qs}` : '');
  const response = await ServerConnection.makeRequest(url, init, settings);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const e = data.error || {};
    throw new LilError(e.message || response.statusText, e.fix);
  }
  return data as T;
}

export function post<T>(path: string, body: any = {}): Promise<T> {
  return request<T>(path, { method: 'POST', body: JSON.stringify(body) });
}

const id = (runId: string) => encodeURIComponent(runId);

export const api = {
  runs: (status = '', q = '') =>
    request<{ runs: IRun[]; waiting: number }>('runs', {}, { status, q }),
  run: (runId: string) => request<IRunDetail>(`runs/${id(runId)}`),
  action: (runId: string, action: string, extra: any = {}) =>
    post<{ message: string }>(`runs/${id(runId)}/actions`, {
      action,
      ...extra
    }),
  approvals: () =>
    request<{ approvals: IApproval[] }>('approvals', {}, { status: 'pending' }),
  decide: (approvalId: string, body: any) =>
    post<{ message: string }>(`approvals/${id(approvalId)}/decide`, body),
  resolve: (runId: string, position: number, resolution: string) =>
    post<{ message: string }>(`effects/${id(runId)}/${position}/resolve`, {
      resolution
    }),
  splices: () =>
    request<{ proposals: IProposal[] }>('splices', {}, { state: 'pending' }),
  splice: (proposalId: string, verb: 'apply' | 'reject', comment?: string) =>
    post<{ message: string }>(
      `splices/${id(proposalId)}/${verb}`,
      comment ? { comment } : {}
    ),
  queues: () => request<IFleet>('queues'),
  cells: (path: string, names: string[], keys: string[]) =>
    request<{
      cells: Record<string, { run_id: string; status: string | null }>;
    }>('cells', {}, { path, name: names, key: keys })
};

/** Calls ``handler`` with every journal event the server relays (pushed, never polled). */
export function onJournalEvent(
  events: Event.IManager,
  handler: (event: IJournalEvent) => void
): void {
  events.stream.connect((_, emission) => {
    if (emission.schema_id === EVENT_SCHEMA) {
      handler(emission as unknown as IJournalEvent);
    }
  });
}

/** An element with a class and text, the building block of every view here. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text) {
    node.textContent = text;
  }
  return node;
}
