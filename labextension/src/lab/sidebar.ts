// The sidebar widget: polls <base_url>/nbcluster/clusters and draws each cluster and its tasks.
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

/** One task as the server extension reports it (records + its GetStatus). */
export interface ITaskInfo {
  job: string;
  index: number;
  address: string;
  state: string;
  pid: number | null;
  steps_run: number;
  bytes_sent: number;
  bytes_received: number;
  last_error: string;
}

/** One running cluster: its record and its tasks' live state. */
export interface IClusterInfo {
  id: string;
  name: string;
  owner_pid: number;
  started: number;
  launcher: string;
  tasks: ITaskInfo[];
}

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
  private readonly _body: HTMLElement;
  private readonly _settings = ServerConnection.makeSettings();

  constructor() {
    super();
    this.id = 'nbcluster-sidebar';
    this.addClass('nbc-sidebar');
    this.title.icon = clusterIcon;
    this.title.caption = 'nbcluster: running clusters';
    const header = document.createElement('div');
    header.className = 'nbc-sidebar-header';
    header.textContent = 'nbcluster clusters';
    this._body = document.createElement('div');
    this._body.className = 'nbc-sidebar-body';
    this._body.textContent = 'loading…';
    this.node.append(header, this._body);
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

  /** Fetches the cluster list once and redraws (a slow answer never stacks a second request). */
  async refresh(): Promise<void> {
    if (this._busy) {
      return;
    }
    this._busy = true;
    try {
      const url = this._settings.baseUrl + 'nbcluster/clusters';
      const response = await ServerConnection.makeRequest(url, {}, this._settings);
      if (response.status === 404) {
        this.showError('The nbcluster server extension is not enabled in this Jupyter server ' +
                       '(jupyter server extension enable nbcluster.jupyter, then restart it).');
        return;
      }
      if (!response.ok) {
        this.showError(`GET /nbcluster/clusters: ${response.status} ${response.statusText}`);
        return;
      }
      this.show_(await response.json());
    } catch (err) {
      this.showError(`GET /nbcluster/clusters failed: ${err}`);
    } finally {
      this._busy = false;
    }
  }

  private showError(message: string): void {
    this._body.replaceChildren(el('div', 'nbc-sidebar-error', message));
  }

  private show_(clusters: IClusterInfo[]): void {
    if (clusters.length === 0) {
      this._body.replaceChildren(el('div', 'nbc-sidebar-empty', 'no clusters running'));
      return;
    }
    this._last = clusters;
    this._body.replaceChildren(...clusters.map(
      c => renderCluster(c, c.id === this._armed, () => this.onStopClick(c))));
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
    const url = this._settings.baseUrl + `nbcluster/clusters/${encodeURIComponent(cluster.id)}/stop`;
    try {
      const response = await ServerConnection.makeRequest(url, { method: 'POST' }, this._settings);
      if (!response.ok) {
        const answer = await response.json().catch(() => ({}));
        this.showError(`Stopping ${cluster.name}: ${answer.message ?? response.statusText}`);
        return;
      }
    } catch (err) {
      this.showError(`Stopping ${cluster.name} failed: ${err}`);
      return;
    }
    await this.refresh();
  }
}

function el(tag: string, className: string, text = ''): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

function renderCluster(cluster: IClusterInfo, armed: boolean, onStop: () => void): HTMLElement {
  const box = el('div', 'nbc-sidebar-cluster');
  box.dataset.name = cluster.name;
  const title = el('div', 'nbc-sidebar-cluster-title');
  title.append(el('span', 'nbc-sidebar-cluster-name', cluster.name),
               el('span', 'nbc-sidebar-cluster-owner',
                  ` ${cluster.launcher}, owner pid ${cluster.owner_pid}`));
  if (cluster.launcher === 'local') { // a remote task's pid is on its own host
    title.append(stopButton(armed, onStop));
  }
  const tasks = el('ul', 'nbc-sidebar-tasks');
  tasks.append(...cluster.tasks.map(renderTask));
  box.append(title, tasks);
  return box;
}

/** A cluster's Stop button: "Stop", or "Stop all tasks?" once armed by a first click. */
function stopButton(armed: boolean, onClick: () => void): HTMLElement {
  const button = el('button', `nbc-sidebar-stop jp-mod-styled${armed ? ' nbc-armed' : ''}`,
                    armed ? 'Stop all tasks?' : 'Stop') as HTMLButtonElement;
  button.title = 'Stop every task of this cluster';
  button.onclick = onClick;
  return button;
}

function renderTask(task: ITaskInfo): HTMLElement {
  // the state is a word from a fixed set (launch/status.py STATES); keep the class name safe anyway
  const state = task.state.replace(/[^a-z]/g, '') || 'unknown';
  const row = el('li', `nbc-sidebar-task nbc-state-${state}`);
  row.dataset.task = `${task.job}:${task.index}`;
  row.title = task.last_error ? `${state}: ${task.last_error}` : state;
  // a task still queued (a Slurm job waiting) shows why instead of an address it has not got
  const detail = state === 'pending' && task.last_error ? task.last_error :
    `${task.address} · pid ${task.pid ?? '?'} · ${task.steps_run} ` +
    (task.steps_run === 1 ? 'step' : 'steps');
  row.append(el('span', 'nbc-sidebar-dot'),
             el('span', 'nbc-sidebar-task-name', `/job:${task.job}/task:${task.index}`),
             el('span', 'nbc-sidebar-task-detail', detail));
  return row;
}
