// Widgets never lie, page side: when a notebook's kernel restarts or dies from the page, each
// live nbcluster widget output is frozen into static HTML of what it showed, with a note.
// (JupyterLab drops whatever a restarting kernel sends, so the kernel cannot do this itself.)
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';
const GONE = new Set(['restarting', 'autorestarting', 'dead']);

function escape(text: string): string {
  const div = document.createElement('div');
  div.textContent = text;
  return div.innerHTML;
}

/** The HTML a frozen output keeps: the `freeze` part of its view (or all of it), with the
 *  states of the tasks the kernel started set to stopped (they end with it). */
function frozen(node: Element | null, marker: any, fallback: string): string {
  const part = node && marker.freeze ? node.querySelector(marker.freeze) : node;
  if (!part) {
    return fallback;
  }
  const copy = part.cloneNode(true) as HTMLElement;
  copy.querySelectorAll('input, select, button, textarea').forEach(c => c.remove());
  if (marker.owns_tasks) {
    copy.querySelectorAll<HTMLElement>('tr.nbc-task').forEach(row => {
      row.className = 'nbc-task nbc-state-stopped';
      row.style.borderLeft = '4px solid #57606a';
      const state = row.querySelector('td.nbc-state');
      if (state) {
        state.innerHTML = "<span style='color:#57606a;font-weight:bold'>&#9679; stopped</span>";
      }
    });
  }
  return marker.freeze ? copy.outerHTML : copy.innerHTML;
}

/** Freezes every live nbcluster widget output of `panel`; how many. */
export function freezeWidgets(panel: NotebookPanel, why: string): number {
  if (panel.isDisposed || !panel.content || panel.content.isDisposed) {
    return 0; // closed meanwhile (its kernel's last signals can come after): nothing shows
  }
  const stamp = new Date().toISOString().slice(11, 19) + ' UTC';
  let done = 0;
  panel.content.widgets.forEach(cell => {
    if (cell.isDisposed || cell.model.type !== 'code') {
      return;
    }
    const outputs = (cell.model as any).outputs;
    const area = (cell as any).outputArea;
    const views = area && !area.isDisposed ? area.widgets : []; // a disposed area has no layout
    for (let i = 0; i < outputs.length; i++) {
      const json = outputs.get(i).toJSON() as any;
      const marker = (json.metadata ?? {}).nbcluster;
      if (!marker || marker.snapshot || !json.data?.[WIDGET_VIEW]) {
        continue;
      }
      const view = views[i]?.node.querySelector('.jp-OutputArea-output') ?? null;
      let note = `snapshot: kernel gone (${why}) at ${stamp}; the last state seen, no longer updated`;
      if (marker.owns_tasks) {
        note += '; the tasks it started were stopped with it';
      }
      const body = frozen(view, marker, json.data['text/html'] ?? escape(json.data['text/plain'] ?? ''));
      outputs.set(i, {
        output_type: 'display_data',
        data: {
          'text/html': `<div class='nbc-snapshot-note'><i>${escape(note)}</i></div>${body}`,
          'text/plain': `${json.data['text/plain'] ?? ''}\n(${note})`
        },
        metadata: { nbcluster: { ...marker, snapshot: 'kernel gone' } }
      });
      done++;
    }
  });
  return done;
}

/** Watches every notebook's kernel: a restart or death from the page freezes its widgets. */
export function watchKernels(tracker: INotebookTracker): void {
  const watch = (panel: NotebookPanel): void => {
    panel.sessionContext.statusChanged.connect((_, status) => {
      if (GONE.has(status)) {
        freezeWidgets(panel, status === 'dead' ? 'it died' : 'restarted from the page');
      }
    });
    panel.sessionContext.kernelChanged.connect((_, change) => {
      if (change.oldValue && !change.newValue) {
        freezeWidgets(panel, 'shut down from the page');
      }
    });
  };
  tracker.forEach(watch);
  tracker.widgetAdded.connect((_, panel) => watch(panel));
}
