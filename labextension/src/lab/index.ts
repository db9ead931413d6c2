// The JupyterLab plugin: the "nbcluster" sidebar of running clusters in the left area, and the
// hook that freezes nbcluster widgets into snapshots when a kernel restarts from the page.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker } from '@jupyterlab/notebook';

import { ClusterSidebar } from './sidebar';
import { watchKernels } from './snapshots';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nbcluster:sidebar',
  description: 'A left-sidebar panel listing the nbcluster clusters running on this machine.',
  autoStart: true,
  optional: [INotebookTracker],
  activate: (app: JupyterFrontEnd, notebooks: INotebookTracker | null): void => {
    const sidebar = new ClusterSidebar(app, notebooks);
    app.shell.add(sidebar, 'left', { rank: 900 });
    if (notebooks) {
      watchKernels(notebooks);
    }
  }
};

export default plugin;
