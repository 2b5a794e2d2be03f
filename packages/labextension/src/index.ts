/**
 * letitloop in JupyterLab: the runs sidebar with its approvals inbox and splices, run and
 * splice views in the main area, %%durable cell badges, and a toast when a run starts
 * waiting for an approval. All data comes from the letitloop server extension; all updates
 * from the journal events it relays on Jupyter's event bus.
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';

import { IProposal, onJournalEvent } from './api';
import { CellBadges } from './badges';
import { durableCells } from './lsp';
import { LilSidebar } from './sidebar';
import { RunView, SpliceView } from './views';

const loopIcon = new LabIcon({
  name: 'letitloop:loop',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M12 4V1L8 5l4 4V6a6 6 0 1 1-6 6H4a8 8 0 1 0 8-8z"/>' +
    '</svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'letitloop:plugin',
  description: 'letitloop runs, approvals, cell badges and splice review in JupyterLab',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILabShell],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const views = new Map<string, MainAreaWidget<RunView>>();
    const openRun = (runId: string) => {
      let view = views.get(runId);
      if (!view || view.isDisposed) {
        view = new MainAreaWidget({ content: new RunView(runId) });
        view.id = `lil-run-view-${views.size}`;
        view.title.label = runId;
        view.title.icon = loopIcon;
        views.set(runId, view);
        app.shell.add(view, 'main');
      }
      app.shell.activateById(view.id);
    };
    const openSplice = (p: IProposal) => {
      const view = new MainAreaWidget({
        content: new SpliceView(p, () => void sidebar.refresh())
      });
      view.title.label = `splice ${p.target}`;
      view.title.icon = loopIcon;
      app.shell.add(view, 'main');
      app.shell.activateById(view.id);
    };
    let waiting = -1;
    const sidebar = new LilSidebar({
      openRun,
      openSplice,
      onWaiting: count => {
        sidebar.title.dataset = {
          ...sidebar.title.dataset,
          'lil-waiting': String(count)
        };
        sidebar.title.caption = count
          ? `letitloop: ${count} approval${count > 1 ? 's' : ''} waiting`
          : 'letitloop runs';
        if (waiting >= 0 && count > waiting) {
          Notification.warning(`letitloop: a run is waiting for your approval (${count} waiting)`, {
            autoClose: 8000,
            actions: [
              {
                label: 'Open inbox',
                callback: () => {
                  app.shell.activateById(sidebar.id);
                  sidebar.showSection('inbox');
                }
              }
            ]
          });
        }
        waiting = count;
      }
    });
    sidebar.title.icon = loopIcon;
    app.shell.add(sidebar, 'left', { rank: 650 });
    app.commands.addCommand('letitloop:open-inbox', {
      label: 'letitloop: Open the approvals inbox',
      execute: () => {
        app.shell.activateById(sidebar.id);
        sidebar.showSection('inbox');
      }
    });
    app.commands.addCommand('letitloop:open-run', {
      label: 'letitloop: Open a run',
      execute: args => openRun(String(args.runId))
    });
    const badges = new CellBadges(tracker, openRun);
    onJournalEvent(app.serviceManager.events, event => {
      void sidebar.refresh();
      badges.onEvent(event.run_id);
      for (const [runId, view] of views) {
        if (!view.isDisposed && (runId === event.run_id || event.kind === 'resync')) {
          void view.content.refresh();
        }
      }
    });
    void sidebar.refresh();
    console.log('letitloop lab extension is activated');
  }
};

export default [plugin, durableCells];
