// The sidebar widget: polls <base_url>/nbcluster/clusters and draws each cluster (owner, totals,
// actions) and its tasks (state, failure reason, log, restart); a "New cluster" form on top.
import { JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { button, call, clusterPath, el, formatBytes, IClusterInfo, ITaskInfo,
         taskPath } from './api';
import { NewClusterForm } from './form';
import { insertConnectCode, openTimeline } from './notebook';
import { dashboardId, DashboardPanel, logId, LogPanel, openPanel } from './panels';

export type { IClusterInfo, ITaskInfo } from './api';

const POLL_MS = 2000;
const CONFIRM_MS = 4000; // how long a first click on Stop waits for the second one

// three task nodes wired together; jp-icon3 follows the light/dark theme
const CLUSTER_SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
  '<g class="jp-icon3" fill="#616161"><circle cx="12" cy="4.5" r="3"/><circle cx="4.5" cy="19" r="3"/>' +
  '<circle cx="19.5" cy="19" r="3"/><path d="M11 7h2v4.2l5.6 5.1-1.3 1.5L12 13l-5.3 4.8-1.3-1.5L11 11.2z"/></g></svg>';

export const clusterIcon = new LabIcon({ name: 'nbcluster:cluster', svgstr: CLUSTER_SVG });

/** Lists the running clusters; refreshes every 2 s while attached (polling stops when closed). */
export class ClusterSidebar extends Widget {
  private _timer: number | null = null;
  private _busy = false;
  private _last: IClusterInfo[] = [];
  private _armed: string | null = null; // the cluster whose Stop was clicked once
  private _armedTimer: number | null = null;
  private _messages = new Map<string, string>(); // cluster id -> the last action's answer
  private readonly _body: HTMLElement;
  private readonly _formBox: HTMLElement;

  constructor(private readonly _app: JupyterFrontEnd | null = null,
              private readonly _notebooks: INotebookTracker | null = null) {
    super();
    this.id = 'nbcluster-sidebar';
    this.addClass('nbc-sidebar');
    this.title.icon = clusterIcon;
    this.title.caption = 'nbcluster: running clusters';
    const header = el('div', 'nbc-sidebar-header');
    header.append(el('span', '', 'nbcluster clusters'),
                  button('New cluster', 'nbc-sidebar-new', 'Start a cluster from this page',
                         () => this.toggleForm()));
    this._formBox = el('div', 'nbc-sidebar-form');
    this._body = el('div', 'nbc-sidebar-body', 'loading…');
    this.node.append(header, this._formBox, this._body);
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

  private toggleForm(): void {
    if (this._formBox.firstChild) {
      this._formBox.replaceChildren();
      return;
    }
    const form = new NewClusterForm(cluster => {
      this._messages.set(cluster.id, `started from this page: ${cluster.summary.up} of ` +
                         `${cluster.summary.tasks} tasks up`);
      this._formBox.replaceChildren();
      void this.refresh();
    }, () => this._formBox.replaceChildren());
    this._formBox.replaceChildren(form.node);
  }

  /** Fetches the cluster list once and redraws (a slow answer never stacks a second request). */
  async refresh(): Promise<void> {
    if (this._busy) {
      return;
    }
    this._busy = true;
    try {
      this.show_(await call<IClusterInfo[]>('clusters'));
    } catch (err) {
      this.showError(`GET /nbcluster/clusters: ${(err as Error).message}`);
    } finally {
      this._busy = false;
    }
  }

  private showError(message: string): void {
    this._body.replaceChildren(el('div', 'nbc-sidebar-error', message));
  }

  private show_(clusters: IClusterInfo[]): void {
    this._last = clusters;
    if (clusters.length === 0) {
      this._body.replaceChildren(el('div', 'nbc-sidebar-empty', 'no clusters running'));
      return;
    }
    this._body.replaceChildren(...clusters.map(c => this.renderCluster(c)));
  }

  private say(cluster: IClusterInfo, message: string): void {
    this._messages.set(cluster.id, message);
    this.show_(this._last);
  }

  // Two clicks stop a cluster (one stray click must not end a training run); the
  // armed state lives here, since every poll redraws the buttons.
  private onStopClick(cluster: IClusterInfo): void {
    if (this._armedTimer !== null) {
      window.clearTimeout(this._armedTimer);
      this._armedTimer = null;
    }
    if (this._armed !== cluster.id) {
      this._armed = cluster.id;
      this._armedTimer = window.setTimeout(() => {
        this._armed = null;
        this._armedTimer = null;
        this.show_(this._last);
      }, CONFIRM_MS);
      this.show_(this._last);
      return;
    }
    this._armed = null;
    void this.stop(cluster);
  }

  /** Asks the server to stop `cluster`'s tasks, then redraws. */
  async stop(cluster: IClusterInfo): Promise<void> {
    try {
      await call(`${clusterPath(cluster.id)}/stop`, { method: 'POST' });
    } catch (err) {
      this.showError(`Stopping ${cluster.name}: ${(err as Error).message}`);
      return;
    }
    await this.refresh();
  }

  private async restart(cluster: IClusterInfo, task: ITaskInfo): Promise<void> {
    const name = `/job:${task.job}/task:${task.index}`;
    this.say(cluster, `restarting ${name}…`);
    try {
      const answer = await call<{ target: string }>(`${taskPath(cluster.id, task)}/restart`,
                                                    { method: 'POST' });
      this.say(cluster, `${name} restarted at ${answer.target}`);
    } catch (err) {
      this.say(cluster, (err as Error).message);
    }
    await this.refresh();
  }

  private async insertCode(cluster: IClusterInfo): Promise<void> {
    if (!this._notebooks) {
      this.say(cluster, 'No notebook tracker in this JupyterLab: cannot insert code');
      return;
    }
    try {
      const path = await insertConnectCode(this._notebooks, cluster);
      this.say(cluster, `connect code inserted into ${path}`);
    } catch (err) {
      this.say(cluster, (err as Error).message);
    }
  }

  private openDashboard(cluster: IClusterInfo): void {
    if (this._app) {
      openPanel(this._app, dashboardId(cluster.id), `Dashboard: ${cluster.name}`,
                () => new DashboardPanel(cluster.id, cluster.name));
    }
  }

  private openTimeline(cluster: IClusterInfo): void {
    if (!this._app || !this._notebooks) {
      this.say(cluster, 'No notebook tracker in this JupyterLab: no Timeline to show');
      return;
    }
    try {
      openTimeline(this._app, this._notebooks, cluster);
    } catch (err) {
      this.say(cluster, `Opening the Timeline failed: ${(err as Error).message}`);
    }
  }

  private openLog(cluster: IClusterInfo, task: ITaskInfo): void {
    if (this._app) {
      openPanel(this._app, logId(cluster.id, task), `Log: ${cluster.name} ${task.job}:${task.index}`,
                () => new LogPanel(cluster.id, task));
    }
  }

  private renderCluster(cluster: IClusterInfo): HTMLElement {
    const box = el('div', 'nbc-sidebar-cluster');
    box.dataset.name = cluster.name;
    box.dataset.id = cluster.id;
    const title = el('div', 'nbc-sidebar-cluster-title');
    const owner = (cluster.owner === 'server' ? 'started here, ' :
      cluster.notebook ? `${cluster.notebook}, ` : '') + `owner pid ${cluster.owner_pid}`;
    title.append(el('span', 'nbc-sidebar-cluster-name', cluster.name),
                 el('span', 'nbc-sidebar-cluster-owner', ` ${cluster.launcher}, ${owner}`));
    if (cluster.launcher === 'local' || cluster.owner === 'server') { // a remote pid is on its host
      const armed = cluster.id === this._armed;
      const stop = button(armed ? 'Stop all tasks?' : 'Stop',
                          `nbc-sidebar-stop${armed ? ' nbc-armed' : ''}`,
                          'Stop every task of this cluster', () => this.onStopClick(cluster));
      title.append(stop);
    }
    const s = cluster.summary;
    const summary = el('div', 'nbc-sidebar-summary',
                       `${s.tasks} ${s.tasks === 1 ? 'task' : 'tasks'} (${s.up} up) · ${s.cpus} CPU` +
                       (s.gpus ? ` · ${s.gpus} GPU (${formatBytes(s.gpu_bytes_in_use)})` : '') +
                       ` · ${formatBytes(s.rss_bytes)} · ${s.cpu_percent.toFixed(0)}% CPU`);
    const actions = el('div', 'nbc-sidebar-actions');
    actions.append(
      button('Dashboard', 'nbc-sidebar-dashboard', 'Open the live table as a tab',
             () => this.openDashboard(cluster)),
      button('Timeline', 'nbc-sidebar-timeline', "Open the owner notebook's Timeline as a tab",
             () => this.openTimeline(cluster)),
      button('Insert connect code', 'nbc-sidebar-insert',
             'Add a cell that connects to this cluster to the active notebook',
             () => void this.insertCode(cluster)));
    const tasks = el('ul', 'nbc-sidebar-tasks');
    tasks.append(...cluster.tasks.map(t => this.renderTask(cluster, t)));
    box.append(title, summary, actions, tasks);
    const message = this._messages.get(cluster.id);
    if (message) {
      box.append(el('div', 'nbc-sidebar-message', message));
    }
    return box;
  }

  private renderTask(cluster: IClusterInfo, task: ITaskInfo): HTMLElement {
    // the state is a word from a fixed set (launch/status.py STATES); keep the class name safe anyway
    const state = task.state.replace(/[^a-z]/g, '') || 'unknown';
    const row = el('li', `nbc-sidebar-task nbc-state-${state}`);
    row.dataset.task = `${task.job}:${task.index}`;
    const why = task.failure || task.last_error;
    row.title = why ? `${state}: ${why}` : state;
    // a task still queued (a Slurm job waiting) shows why instead of an address it has not got
    const detail = state === 'pending' && task.last_error ? task.last_error :
      `${task.address} · pid ${task.pid ?? '?'} · ${task.steps_run} ` +
      (task.steps_run === 1 ? 'step' : 'steps') +
      (task.rss_bytes ? ` · ${formatBytes(task.rss_bytes)}` : '');
    const buttons = el('span', 'nbc-sidebar-task-buttons');
    if (task.has_log) {
      buttons.append(button('Log', 'nbc-sidebar-log', 'Open this task\'s log in a tab',
                            () => this.openLog(cluster, task)));
    }
    buttons.append(button(cluster.can_restart ? 'Restart' : 'Restart…', 'nbc-sidebar-restart',
                          cluster.can_restart ? 'Restart this task at its address' : cluster.restart_hint,
                          () => void this.restart(cluster, task)));
    row.append(el('span', 'nbc-sidebar-dot'),
               el('span', 'nbc-sidebar-task-name', `/job:${task.job}/task:${task.index}`),
               buttons, el('span', 'nbc-sidebar-task-detail', detail));
    if (state !== 'up' && state !== 'pending' && task.failure) {
      row.append(el('span', 'nbc-sidebar-failure', task.failure));
    }
    return row;
  }
}
