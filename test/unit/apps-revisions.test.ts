// decideRevisions: the seed's webhook rule, moved into the entity workflow.
// Table-driven: every case names the App as read, the command, what tend saw last, and the outcome.
import assert from 'node:assert/strict';
import { decideRevisions, processesHash, revisionsChange, type AppCommand, type LastSeen } from '../../src/apps/revisions.ts';
import { APP_REV, LAST_STOP_APP_REV, type App, type DesiredState } from '../../src/apps/types.ts';

function app(o: { desired: DesiredState; observed?: DesiredState; appRev?: number; lastStop?: number; generation?: number; instances?: number }): App {
  return {
    apiVersion: 'tend.dev/v1alpha1', kind: 'App',
    metadata: {
      name: 'a', namespace: 'n', generation: o.generation ?? 5,
      annotations: o.appRev === undefined ? undefined : { [APP_REV]: String(o.appRev), [LAST_STOP_APP_REV]: String(o.lastStop ?? 0) },
    },
    spec: { desiredState: o.desired, processes: [{ type: 'web', instances: o.instances ?? 2, template: {} }] },
    ...(o.observed && { status: { observedDesiredState: o.observed } }),
  };
}

const seen = (o: Partial<LastSeen> = {}): LastSeen => ({
  generation: 5, desiredState: 'STARTED', appRev: 3, processesHash: processesHash(app({ desired: 'STARTED' })), ...o,
});

interface Case {
  name: string;
  app: App;
  command?: AppCommand;
  lastSeen?: LastSeen;
  /** The highest generation the watcher saw STOPPED, not yet accounted for. */
  stopSeen?: number;
  want: { appRev: number; lastStopRev: number; desiredState: DesiredState; reason?: string; stopsThrough?: number };
}

const cases: Case[] = [
  { name: 'a new App without annotations gets revision 0', app: app({ desired: 'STARTED' }), want: { appRev: 0, lastStopRev: 0, desiredState: 'STARTED' } },
  { name: 'nothing to do', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1 }), lastSeen: seen(), want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'stop command on a started App bumps both', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1 }), command: { kind: 'stop' }, lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED', reason: 'stop' } },
  { name: 'stop command on a stopped App changes nothing', app: app({ desired: 'STOPPED', observed: 'STOPPED', appRev: 3, lastStop: 1 }), command: { kind: 'stop' }, lastSeen: seen({ desiredState: 'STOPPED' }),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STOPPED' } },
  { name: 'stop retried after its patch landed does not bump twice', app: app({ desired: 'STOPPED', observed: 'STARTED', appRev: 4, lastStop: 2 }), command: { kind: 'stop' }, lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED' } },
  { name: 'start command sets STARTED, revisions kept', app: app({ desired: 'STOPPED', observed: 'STOPPED', appRev: 4, lastStop: 2 }), command: { kind: 'start' }, lastSeen: seen({ desiredState: 'STOPPED', appRev: 4 }),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED' } },
  { name: 'rolling restart bumps app-rev only', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1 }), command: { kind: 'rolling' }, lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 1, desiredState: 'STARTED', reason: 'rolling-restart' } },
  { name: 'rolling restart retried after its patch landed does not bump twice', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 4, lastStop: 1 }), command: { kind: 'rolling' }, lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'rolling restart of a stopped App starts it', app: app({ desired: 'STOPPED', observed: 'STOPPED', appRev: 3, lastStop: 1 }), command: { kind: 'rolling' }, lastSeen: seen({ desiredState: 'STOPPED' }),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'kubectl stop (STOPPED, observed STARTED) bumps both', app: app({ desired: 'STOPPED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED', reason: 'stopped-outside-tend' } },
  { name: 'kubectl stop seen by a new workflow (status says STARTED) bumps both', app: app({ desired: 'STOPPED', observed: 'STARTED', appRev: 3, lastStop: 1 }),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED', reason: 'stopped-outside-tend' } },
  { name: 'kubectl stop not yet reconciled, then a start command: bumped and started', app: app({ desired: 'STOPPED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), command: { kind: 'start' }, lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stopped-outside-tend' } },
  { name: 'kubectl stop + start seen only as the result (generation +2, same processes) rolls', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-and-start-seen-as-result' } },
  { name: 'generation +2 with changed processes is a spec edit, not a restart', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7, instances: 5 }), lastSeen: seen(),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'generation +1 with the same processes changes nothing', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), lastSeen: seen(),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  // The watcher saw generation 6 STOPPED; the reconcile reads 7, STARTED again (status last written at 5, STARTED).
  { name: 'stop seen by the watcher, start read: bumps both once, stays STARTED', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-seen-by-watcher', stopsThrough: 6 } },
  { name: 'stop seen by the watcher, start with other instances read: bumps both once (no inference could tell)', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7, instances: 3 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-seen-by-watcher', stopsThrough: 6 } },
  { name: 'stop seen by the watcher and two more generations: one bump, not one per rule', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 8 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-seen-by-watcher', stopsThrough: 6 } },
  { name: 'stop seen by the watcher reported after a reconcile read the start (late signal): still bumps', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7, instances: 3 }),
    lastSeen: seen({ generation: 7, processesHash: processesHash(app({ desired: 'STARTED', instances: 3 })) }),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-seen-by-watcher', stopsThrough: 6 } },
  { name: 'stop seen by the watcher, retried after the bump landed: no second bump, the stop accounted', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 4, lastStop: 2, generation: 7 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', stopsThrough: 6 } },
  { name: 'stop seen by the watcher while tend last saw the App STOPPED: the start makes new workloads, no bump', stopSeen: 8,
    app: app({ desired: 'STARTED', observed: 'STOPPED', appRev: 4, lastStop: 2, generation: 9 }), lastSeen: seen({ desiredState: 'STOPPED', appRev: 4, generation: 6 }),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', stopsThrough: 8 } },
  { name: 'stop seen by the watcher and read STOPPED: the webhook rule, one bump', stopSeen: 6,
    app: app({ desired: 'STOPPED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED', reason: 'stopped-outside-tend', stopsThrough: 6 } },
  { name: 'stop seen by the watcher, then a rolling restart command: one bump of both rolls the pods', stopSeen: 6, command: { kind: 'rolling' },
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-seen-by-watcher', stopsThrough: 6 } },
  { name: 'a reported stop beyond the App\'s generation (forged) is ignored', stopSeen: 99,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), lastSeen: seen(),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'a reported stop at the very generation read STARTED (forged: that version is the one read) rolls nothing', stopSeen: 6,
    app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 6 }), lastSeen: seen(),
    want: { appRev: 3, lastStopRev: 1, desiredState: 'STARTED' } },
  { name: 'inferred stop + start accounts for the generations before the one read', app: app({ desired: 'STARTED', observed: 'STARTED', appRev: 3, lastStop: 1, generation: 7 }), lastSeen: seen(),
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STARTED', reason: 'stop-and-start-seen-as-result', stopsThrough: 6 } },
  { name: 'a kubectl stop retried after its patch landed, by a workflow that saw nothing yet: status.revision says it bumped',
    app: { ...app({ desired: 'STOPPED', observed: 'STARTED', appRev: 4, lastStop: 2 }), status: { observedDesiredState: 'STARTED', revision: '3' } },
    want: { appRev: 4, lastStopRev: 2, desiredState: 'STOPPED', stopsThrough: 5 } },
  { name: 'garbage annotations count as 0', app: { ...app({ desired: 'STARTED' }), metadata: { name: 'a', namespace: 'n', generation: 1, annotations: { [APP_REV]: 'x', [LAST_STOP_APP_REV]: '-2' } } },
    want: { appRev: 0, lastStopRev: 0, desiredState: 'STARTED' } },
];

describe('apps: decideRevisions', () => {
  for (const c of cases) {
    it(c.name, () => {
      const d = decideRevisions(c.app, c.command, c.lastSeen, c.stopSeen);
      const got = { appRev: d.appRev, lastStopRev: d.lastStopRev, desiredState: d.desiredState, ...(d.reason && { reason: d.reason }) };
      const { stopsThrough, ...want } = c.want;
      assert.deepEqual(got, want);
      if (stopsThrough !== undefined) assert.equal(d.stopsThrough, stopsThrough, 'stopsThrough');
    });
  }

  it('revisionsChange: missing annotations are written once, then nothing changes', () => {
    const a = app({ desired: 'STARTED' });
    const d = decideRevisions(a, undefined, undefined);
    assert.equal(revisionsChange(a, d), true);
    const written = app({ desired: 'STARTED', appRev: 0, lastStop: 0 });
    assert.equal(revisionsChange(written, decideRevisions(written, undefined, undefined)), false);
  });
});
