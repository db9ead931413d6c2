// What the sidebar does in notebooks: insert a cluster's connect cell into the active notebook,
// and open a notebook's Timeline widget as its own main-area panel (a second live view).
import { JupyterFrontEnd } from '@jupyterlab/application';
import { NotebookActions, INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { Panel, Widget } from '@lumino/widgets';

import { call, clusterPath, el, IClusterInfo } from './api';
import { openPanel } from './panels';

const WIDGET_VIEW = 'application/vnd.jupyter.widget-view+json';

/** Inserts the connect cell of `cluster` below the active cell of the current notebook. */
export async function insertConnectCode(tracker: INotebookTracker,
                                        cluster: IClusterInfo): Promise<string> {
  const panel = tracker.currentWidget;
  if (!panel) {
    throw new Error('Open a notebook first: the connect code goes into the active one');
  }
  const { code } = await call<{ code: string }>(`${clusterPath(cluster.id)}/connect`);
  const notebook = panel.content;
  NotebookActions.insertBelow(notebook);
  notebook.activeCell!.model.sharedModel.setSource(code);
  return panel.context.path;
}

/** The last live output of an nbcluster widget of kind `widget` in `panel`, if any. */
function lastWidgetOutput(panel: NotebookPanel, widget: string): any | null {
  let found: any = null;
  const cells = panel.content.model?.cells;
  for (let i = 0; cells && i < cells.length; i++) {
    const cell = cells.get(i);
    if (cell.type !== 'code') {
      continue;
    }
    for (const output of (cell as any).outputs.toJSON()) {
      const marker = (output.metadata ?? {}).nbcluster;
      if (marker && marker.widget === widget && !marker.snapshot && output.data?.[WIDGET_VIEW]) {
        found = output;
      }
    }
  }
  return found;
}

/** The notebook that owns `cluster` if it is open, else the current one. */
function notebookOf(tracker: INotebookTracker, cluster: IClusterInfo): NotebookPanel | null {
  const owner = tracker.find(p => p.context.path === cluster.notebook);
  return owner ?? tracker.currentWidget;
}

/** Opens the owner notebook's last Timeline as a dockable panel; a note when it shows none. */
export function openTimeline(app: JupyterFrontEnd, tracker: INotebookTracker,
                             cluster: IClusterInfo): void {
  const panel = notebookOf(tracker, cluster);
  const output = panel ? lastWidgetOutput(panel, 'Timeline') : null;
  openPanel(app, `nbc-timeline-${cluster.id.replace(/[^A-Za-z0-9_-]/g, '_')}`,
            `Timeline: ${cluster.name}`, () => {
    const box = new Panel();
    box.addClass('nbc-timeline-panel');
    if (!panel || !output) {
      // the steps' timings live in the kernel that ran them (RunMetadata), not in the tasks
      box.addWidget(new Widget({ node: el('div', 'nbc-timeline-missing',
        `No live Timeline in ${panel ? panel.context.path : 'an open notebook'}. A timeline is ` +
        'the step stats of a run in that kernel: run sess.run(..., options=tf.RunOptions(' +
        'trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta) and display ' +
        'nbcluster.jupyter.widgets.Timeline(meta) there, then open this panel again.') }));
      return box;
    }
    const model = new OutputAreaModel({ trusted: true });
    model.add(output);
    const area = new OutputArea({ model, rendermime: panel.content.rendermime });
    box.addWidget(new Widget({ node: el('div', 'nbc-timeline-source',
                                        `Timeline shown in ${panel.context.path}`) }));
    box.addWidget(area); // disposed with the panel
    return box;
  });
}
