// The JupyterLab plugin: adds the "nbcluster" sidebar of running clusters to the left area.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { ClusterSidebar } from './sidebar';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'nbcluster:sidebar',
  description: 'A left-sidebar panel listing the nbcluster clusters running on this machine.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    const sidebar = new ClusterSidebar();
    app.shell.add(sidebar, 'left', { rank: 900 });
  }
};

export default plugin;
