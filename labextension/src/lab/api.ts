// The server extension's REST routes (nbcluster/jupyter/server_extension.py), typed.
import { ServerConnection } from '@jupyterlab/services';

/** One task as the server extension reports it (its record + its GetStatus). */
export interface ITaskInfo {
  job: string;
  index: number;
  address: string;
  target: string;
  state: string;
  pid: number | null;
  steps_run: number;
  bytes_sent: number;
  bytes_received: number;
  last_error: string;
  failure: string; // why a silent task is down (its log's exit line)
  cpu_percent: number | null; // of one core
  rss_bytes: number;
  devices: string[];
  gpu_memory: { device: string; bytes_in_use: number; device_bytes_total: number }[];
  has_log: boolean;
}

export interface ISummary {
  tasks: number;
  up: number;
  cpus: number;
  gpus: number;
  rss_bytes: number;
  cpu_percent: number;
  gpu_bytes_in_use: number;
}

/** One running cluster: its record and its tasks' live state. */
export interface IClusterInfo {
  id: string;
  name: string;
  owner_pid: number;
  started: number;
  launcher: string;
  notebook: string | null; // the notebook whose kernel owns it
  owner: 'server' | 'kernel' | 'process';
  can_restart: boolean;
  restart_hint: string;
  summary: ISummary;
  tasks: ITaskInfo[];
}

/** The "New cluster" form, as POST /nbcluster/clusters takes it. */
export interface INewCluster {
  name?: string;
  launcher: 'local' | 'ssh' | 'slurm';
  jobs: { [job: string]: number };
  hosts?: string[];
  user?: string;
  python?: string;
  port?: number;
  key?: string;
  ssh_options?: string[];
  partition?: string;
  time?: string;
}

/** A failed call: the server's JSON message and the HTTP status. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

const settings = ServerConnection.makeSettings();

/** Calls `nbcluster/<path>`; its JSON answer, or an ApiError carrying the server's message. */
export async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const url = settings.baseUrl + 'nbcluster/' + path;
  const response = await ServerConnection.makeRequest(url, init, settings);
  if (response.status === 404 && path === 'clusters') {
    throw new ApiError(404, 'The nbcluster server extension is not enabled in this Jupyter ' +
                       'server (jupyter server extension enable nbcluster.jupyter, then restart it).');
  }
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new ApiError(response.status, answer.message ?? `${response.status} ${response.statusText}`);
  }
  return answer as T;
}

export const clusterPath = (id: string): string => `clusters/${encodeURIComponent(id)}`;
export const taskPath = (id: string, task: ITaskInfo): string =>
  `${clusterPath(id)}/tasks/${encodeURIComponent(task.job)}/${task.index}`;

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toPrecision(3)} ${units[i]}`;
}

export function el(tag: string, className: string, text = ''): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  return node;
}

export function button(label: string, className: string, title: string,
                       onClick: () => void): HTMLButtonElement {
  const b = el('button', `${className} nbc-button`, label) as HTMLButtonElement;
  b.title = title;
  b.onclick = onClick;
  return b;
}
