// Main-area panels opened from the sidebar: a cluster's dashboard (rendered from the REST data,
// so it needs no kernel) and a task's log, each a dockable JupyterLab tab.
import { JupyterFrontEnd } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { ApiError, button, call, clusterPath, el, formatBytes, IClusterInfo, ITaskInfo,
         taskPath } from './api';

const POLL_MS = 2000;

/** Opens `make()`'s widget as a main-area tab under `id`, or brings the open one forward. */
export function openPanel(app: JupyterFrontEnd, id: string, label: string,
                          make: () => Widget): MainAreaWidget {
  for (const w of Array.from(app.shell.widgets('main'))) {
    if (w.id === id) {
      app.shell.activateById(id);
      return w as MainAreaWidget;
    }
  }
  const panel = new MainAreaWidget({ content: make() });
  panel.id = id;
  panel.title.label = label;
  panel.title.closable = true;
  app.shell.add(panel, 'main');
  app.shell.activateById(id);
  return panel;
}

const safeId = (s: string): string => s.replace(/[^A-Za-z0-9_-]/g, '_');
export const dashboardId = (cluster: string): string => `nbc-dashboard-${safeId(cluster)}`;
export const logId = (cluster: string, task: ITaskInfo): string =>
  `nbc-log-${safeId(cluster)}-${safeId(task.job)}-${task.index}`;

function cpu(task: ITaskInfo): string {
  return task.cpu_percent === null ? '' : `${task.cpu_percent.toFixed(0)}%`;
}

function devices(task: ITaskInfo): string {
  const gpus = new Map(task.gpu_memory.map(g => [g.device, g]));
  return task.devices.map(d => {
    const g = gpus.get(d);
    return g ? `${d} (${formatBytes(g.bytes_in_use)} of ${formatBytes(g.device_bytes_total)})` : d;
  }).join(', ');
}

const COLUMNS: [string, (t: ITaskInfo) => string][] = [
  ['task', t => `/job:${t.job}/task:${t.index}`], ['state', t => t.state],
  ['address', t => t.address], ['pid', t => String(t.pid ?? '')], ['CPU', cpu],
  ['memory', t => (t.rss_bytes ? formatBytes(t.rss_bytes) : '')], ['devices', devices],
  ['steps', t => (t.state === 'up' ? String(t.steps_run) : '')],
  ['sent', t => (t.state === 'up' ? formatBytes(t.bytes_sent) : '')],
  ['received', t => (t.state === 'up' ? formatBytes(t.bytes_received) : '')],
  ['failure / last error', t => t.failure || t.last_error]
];

/** A cluster's live table from GET /nbcluster/clusters/<id>; says so once the cluster ended. */
export class DashboardPanel extends Widget {
  private _timer: number | null = null;
  private _ended = false;

  constructor(readonly clusterId: string, readonly clusterName: string) {
    super();
    this.addClass('nbc-dashboard-panel');
    this.node.dataset.cluster = clusterId;
    this.node.textContent = 'loading…';
  }

  protected onAfterAttach(): void {
    void this.refresh();
    this._timer = window.setInterval(() => void this.refresh(), POLL_MS);
  }

  protected onBeforeDetach(): void {
    if (this._timer !== null) {
      window.clearInterval(this._timer);
      this._timer = null;
    }
  }

  async refresh(): Promise<void> {
    if (this._ended) {
      return;
    }
    try {
      this.render(await call<IClusterInfo>(clusterPath(this.clusterId)));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        this._ended = true; // its record is gone: stopped, or its owner ended
        const note = el('div', 'nbc-dashboard-ended',
                        `Cluster ${this.clusterName} has ended: it is no longer running ` +
                        `(stopped, or its owner process exited). The table below is its last state.`);
        this.node.prepend(note);
        this.node.querySelectorAll('tr.nbc-task').forEach(row => {
          row.className = 'nbc-task nbc-state-ended';
          const state = row.querySelector('.nbc-state');
          if (state) {
            state.textContent = 'ended';
          }
        });
        const head = this.node.querySelector('.nbc-dashboard-head span');
        if (head) {
          head.textContent = ' · ended; the figures are the last ones seen';
        }
        return;
      }
      this.node.replaceChildren(el('div', 'nbc-sidebar-error', String((err as Error).message)));
    }
  }

  private render(c: IClusterInfo): void {
    const s = c.summary;
    const owner = c.owner === 'server' ? 'started from JupyterLab' :
      c.notebook ? `owned by ${c.notebook}` : `owned by pid ${c.owner_pid}`;
    const head = el('div', 'nbc-dashboard-head');
    head.append(el('b', '', `${c.name}`),
                el('span', '', ` · ${c.launcher}, ${owner} · ${s.up}/${s.tasks} tasks up · ` +
                   `${s.cpus} CPU, ${s.gpus} GPU devices · ${formatBytes(s.rss_bytes)} resident · ` +
                   `${s.cpu_percent.toFixed(0)}% CPU` +
                   (s.gpus ? ` · ${formatBytes(s.gpu_bytes_in_use)} on GPUs` : '')));
    const table = el('table', 'nbc-dashboard-panel-table');
    const header = el('tr', '');
    header.append(...COLUMNS.map(([name]) => el('th', '', name)));
    table.append(header);
    for (const t of c.tasks) {
      const row = el('tr', `nbc-task nbc-state-${t.state.replace(/[^a-z]/g, '')}`);
      row.dataset.task = `${t.job}:${t.index}`;
      row.append(...COLUMNS.map(([name, cell]) =>
        el('td', name === 'state' ? 'nbc-state' : '', cell(t))));
      table.append(row);
    }
    this.node.replaceChildren(head, table);
  }
}

/** The tail of one task's log (GET .../tasks/<job>/<i>/log), refreshed on demand. */
export class LogPanel extends Widget {
  private readonly _pre = el('pre', 'nbc-log-text');
  private readonly _status = el('span', 'nbc-log-status');

  constructor(readonly clusterId: string, readonly task: ITaskInfo) {
    super();
    this.addClass('nbc-log-panel');
    const bar = el('div', 'nbc-log-bar');
    bar.append(button('Refresh', 'nbc-log-refresh', 'Read the log again', () => void this.refresh()),
               this._status);
    this.node.append(bar, this._pre);
  }

  protected onAfterAttach(): void {
    void this.refresh();
  }

  async refresh(): Promise<void> {
    try {
      const log = await call<{ task: string; text: string; lines: number }>(
        `${taskPath(this.clusterId, this.task)}/log?lines=500`);
      this._pre.textContent = log.text || '(the log is empty)';
      this._status.textContent = ` last ${log.lines} lines of ${log.task}, read at ` +
        new Date().toLocaleTimeString();
    } catch (err) {
      this._status.textContent = ` ${(err as Error).message}`;
    }
  }
}
