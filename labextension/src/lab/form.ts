// The sidebar's "New cluster" form: jobs and task counts, local/SSH/Slurm; POSTs to the server,
// which checks the form whole and starts the cluster (nbcluster/jupyter/lab_launch.py).
import { button, call, el, IClusterInfo, INewCluster } from './api';

function field(label: string, input: HTMLElement): HTMLElement {
  const row = el('label', 'nbc-form-field');
  row.append(el('span', 'nbc-form-label', label), input);
  return row;
}

function input(className: string, value = '', placeholder = ''): HTMLInputElement {
  const node = el('input', `nbc-form-input ${className}`) as HTMLInputElement;
  node.value = value;
  node.placeholder = placeholder;
  return node;
}

/** The form as a DOM block; `onStarted` gets the cluster the server started. */
export class NewClusterForm {
  readonly node = el('form', 'nbc-new-cluster');
  private readonly _name = input('nbc-form-name', '', 'optional: cluster-N');
  private readonly _launcher = el('select', 'nbc-form-launcher') as HTMLSelectElement;
  private readonly _jobs = el('div', 'nbc-form-jobs');
  private readonly _hosts = input('nbc-form-hosts', '', 'node1, node2');
  private readonly _user = input('nbc-form-user', '', 'optional');
  private readonly _python = input('nbc-form-python', '', 'python3');
  private readonly _port = input('nbc-form-port', '', '22');
  private readonly _key = input('nbc-form-key', '', 'optional: ~/.ssh/id_ed25519');
  private readonly _options = input('nbc-form-options', '', 'optional: Name=value, ...');
  private readonly _partition = input('nbc-form-partition', '', 'optional');
  private readonly _time = input('nbc-form-time', '', 'minutes or HH:MM:SS');
  private readonly _ssh = el('div', 'nbc-form-ssh');
  private readonly _slurm = el('div', 'nbc-form-slurm');
  private readonly _message = el('div', 'nbc-form-message');
  private readonly _start: HTMLButtonElement;

  constructor(private readonly _onStarted: (c: IClusterInfo) => void,
              private readonly _onCancel: () => void) {
    for (const kind of ['local', 'ssh', 'slurm']) {
      const option = document.createElement('option');
      option.value = kind;
      option.textContent = { local: 'local', ssh: 'SSH', slurm: 'Slurm' }[kind]!;
      this._launcher.append(option);
    }
    this._launcher.onchange = () => this.showLauncher();
    this.addJob('ps', 1);
    this.addJob('worker', 2);
    this._ssh.append(field('hosts', this._hosts), field('user', this._user),
                     field('python', this._python), field('port', this._port),
                     field('key file', this._key),
                     field('ssh -o', this._options));
    this._slurm.append(field('partition', this._partition), field('time limit', this._time));
    this._start = button('Start', 'nbc-form-start jp-mod-accept', 'Start the cluster', () => {});
    this._start.type = 'submit';
    const cancel = button('Cancel', 'nbc-form-cancel', 'Close the form', () => this._onCancel());
    cancel.type = 'button';
    const addJob = button('+ job', 'nbc-form-add-job', 'Add a job', () => this.addJob('', 1));
    addJob.type = 'button';
    const actions = el('div', 'nbc-form-actions');
    actions.append(this._start, cancel);
    this.node.append(el('div', 'nbc-form-title', 'New cluster'), field('name', this._name),
                     field('launcher', this._launcher), this._jobs, addJob, this._ssh,
                     this._slurm, actions, this._message);
    this.node.onsubmit = event => {
      event.preventDefault();
      void this.submit();
    };
    this.showLauncher();
  }

  private showLauncher(): void {
    this._ssh.hidden = this._launcher.value !== 'ssh';
    this._slurm.hidden = this._launcher.value !== 'slurm';
  }

  private addJob(name: string, count: number): void {
    const row = el('div', 'nbc-form-job');
    const job = input('nbc-form-job-name', name, 'job');
    const tasks = input('nbc-form-job-count', String(count));
    tasks.type = 'number';
    tasks.min = '1';
    tasks.max = '64';
    const remove = button('×', 'nbc-form-remove-job', 'Remove this job', () => row.remove());
    remove.type = 'button';
    row.append(job, tasks, el('span', 'nbc-form-unit', 'tasks'), remove);
    this._jobs.append(row);
  }

  /** The form's values as the server takes them. */
  value(): INewCluster {
    const jobs: { [job: string]: number } = {};
    for (const row of Array.from(this._jobs.querySelectorAll('.nbc-form-job'))) {
      const name = (row.querySelector('.nbc-form-job-name') as HTMLInputElement).value.trim();
      const count = (row.querySelector('.nbc-form-job-count') as HTMLInputElement).value;
      if (name) {
        jobs[name] = Number(count); // the server says what is wrong with a bad count
      }
    }
    const form: INewCluster = { launcher: this._launcher.value as INewCluster['launcher'], jobs };
    if (this._name.value.trim()) {
      form.name = this._name.value.trim();
    }
    if (form.launcher === 'ssh') {
      form.hosts = this._hosts.value.split(/[\s,]+/).filter(h => h);
      if (this._user.value.trim()) {
        form.user = this._user.value.trim();
      }
      if (this._python.value.trim()) {
        form.python = this._python.value.trim();
      }
      if (this._port.value.trim()) {
        form.port = Number(this._port.value.trim()); // the server checks the range
      }
      if (this._key.value.trim()) {
        form.key = this._key.value.trim();
      }
      const options = this._options.value.split(/[\s,]+/).filter(o => o);
      if (options.length) {
        form.ssh_options = options;
      }
    }
    if (form.launcher === 'slurm') {
      if (this._partition.value.trim()) {
        form.partition = this._partition.value.trim();
      }
      if (this._time.value.trim()) {
        form.time = this._time.value.trim();
      }
    }
    return form;
  }

  async submit(): Promise<void> {
    this._start.disabled = true;
    this.say('starting…', false);
    try {
      const cluster = await call<IClusterInfo>('clusters', {
        method: 'POST', body: JSON.stringify(this.value())
      });
      this.say(`started ${cluster.name}`, false);
      this._onStarted(cluster);
    } catch (err) {
      this.say(String((err as Error).message ?? err), true);
    } finally {
      this._start.disabled = false;
    }
  }

  private say(text: string, error: boolean): void {
    this._message.textContent = text;
    this._message.classList.toggle('nbc-form-error', error);
  }
}
