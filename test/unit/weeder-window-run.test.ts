// A weeder window's run (src/weeder/window-run.ts) driven through its ports with
// stand-ins for Temporal: a table of situations, each with the activities' answers, and what the
// run asked for (activities, in order), what it recorded and how it ended. The workflow tests
// prove the same against the real server; these reach the turns one at a time.
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  WEED_HOLD_MS, WEEDER_ARMED_DELETES_PATCH, WEEDER_REPROPOSE_SKIPPED_PATCH, WEEDER_SAFETY_HOLD_PATCH, WindowRun, type Scope, type WindowPorts,
} from '../../src/weeder/window-run.ts';
import { WindowState, type Candidate, type WatchOutput, type WeedOutcome, type WeederResult } from '../../src/weeder/window.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const WATCH_MS = 600_000;
const target = { namespace: 'ns', service: 'db' };
const pod = (n: number): Candidate => ({ name: `web-${n}`, uid: `u${n}`, containers: ['c'], owner: 'ReplicaSet/web' });
const at = new Date(T0).toISOString();

class Cancelled extends Error {}
class Refused extends Error {}
class ContinuedAsNew extends Error {
  readonly input: unknown;
  constructor(input: unknown) {
    super('continued as new');
    this.input = input;
  }
}

interface Pending { name: 'watchDependants' | 'weedPods' | 'checkPods'; args: Record<string, unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void }

/** Temporal stood in for: scopes that reject their activities when cancelled, conditions checked after every turn, a clock the test moves. */
class Harness {
  now = T0;
  readonly pending: Pending[] = [];
  readonly asked: string[] = [];
  readonly warnings: string[] = [];
  readonly patches: Set<string>;
  suggested = false;
  private readonly current = new AsyncLocalStorage<FakeScope>();
  private readonly waiters: { fn: () => boolean; resolve: () => void }[] = [];
  readonly state: WindowState;
  readonly run: WindowRun;

  constructor(patches: string[], open: 'window' | 'armed') {
    this.patches = new Set(patches);
    this.state = new WindowState();
    if (open === 'window') this.state.extend(T0, WATCH_MS);
    else this.state.arm(T0, 3600_000);
    const call = (name: Pending['name'], args: Record<string, unknown>) => new Promise<never>((resolve, reject) => {
      const scope = this.current.getStore();
      if (scope?.cancelled) return reject(new Cancelled());
      const p: Pending = { name, args, resolve: resolve as (v: unknown) => void, reject };
      this.pending.push(p);
      this.asked.push(`${name}${name === 'watchDependants' ? `(${args.openOnReady ? 'armed' : 'window'})` : `(${(args.pods as Candidate[]).map((c) => c.uid).join(',')}${args.holdMs ? ` hold ${String(args.holdMs)}` : ''})`}`);
      scope?.activities.add(p);
    });
    const ports: WindowPorts = {
      now: () => this.now,
      scope: () => new FakeScope(this.current, this.forget),
      nonCancellable: (fn) => this.current.run(new FakeScope(this.current, this.forget), fn),
      condition: (fn) => new Promise<void>((resolve) => this.waiters.push({ fn, resolve })),
      allHandlersFinished: () => true,
      continueAsNewSuggested: () => this.suggested,
      continueAsNew: (input) => Promise.reject(new ContinuedAsNew(input)),
      patched: (name) => this.patches.has(name),
      uuid: () => 'token-1',
      warn: (m) => this.warnings.push(m),
      details: () => undefined,
      isCancellation: (err) => err instanceof Cancelled,
      isRefusal: (err) => err instanceof Refused,
      failureMessage: (err) => (err as Error).message,
      failed: (message) => new Error(message),
      weedPods: (ask, holdMs) => call('weedPods', { ...ask, holdMs }),
      checkPods: (ask) => call('checkPods', ask),
      watchDependants: (until, openOnReady, handled, weedToken) => call('watchDependants', { until, openOnReady, handled, weedToken }),
    };
    this.run = new WindowRun(target, this.state, WATCH_MS, ports);
  }

  readonly forget = (p: Pending): void => {
    const i = this.pending.indexOf(p);
    if (i >= 0) this.pending.splice(i, 1);
  };

  /** Lets every turn that can be taken be taken: promises settled, conditions that hold let go. */
  async turn(): Promise<void> {
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      for (const w of [...this.waiters]) {
        if (w.fn()) {
          this.waiters.splice(this.waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    }
  }

  /** The oldest activity still waiting for its answer, of `name`. */
  next(name: Pending['name']): Pending {
    const i = this.pending.findIndex((p) => p.name === name);
    assert.ok(i >= 0, `no ${name} waiting; asked: ${this.asked.join(' ')}`);
    return this.pending.splice(i, 1)[0]!;
  }

  async answer(name: Pending['name'], value: unknown): Promise<void> {
    this.next(name).resolve(value);
    await this.turn();
  }

  async fail(name: Pending['name'], err: Error): Promise<void> {
    this.next(name).reject(err);
    await this.turn();
  }
}

class FakeScope implements Scope {
  cancelled = false;
  readonly activities = new Set<Pending>();
  private readonly current: AsyncLocalStorage<FakeScope>;
  /** Tells the harness an activity ended cancelled: it waits no more. */
  private readonly cancelledOne: (p: Pending) => void;
  constructor(current: AsyncLocalStorage<FakeScope>, cancelledOne: (p: Pending) => void) {
    this.current = current;
    this.cancelledOne = cancelledOne;
  }
  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.cancelled ? Promise.reject(new Cancelled()) : this.current.run(this, fn);
  }
  cancel(): void {
    this.cancelled = true;
    for (const p of this.activities) {
      this.activities.delete(p);
      this.cancelledOne(p);
      p.reject(new Cancelled());
    }
  }
}

const deleted = (uid: string): WeedOutcome => ({ uid, outcome: 'deleted', at });
const observed = (uid: string): WeedOutcome => ({ uid, outcome: 'observed', at, note: 'observe mode' });
const found = (...pods: Candidate[]): WatchOutput => ({ candidates: pods });

interface Case {
  situation: string;
  /** The patches the history has (all when absent). */
  patches?: string[];
  open?: 'window' | 'armed';
  /** What happens, in order, once the run has started. */
  script: (h: Harness) => Promise<void>;
  /** The activities asked for, in order. */
  asked: string[];
  /** How the run ended: its result's weeded UIDs, or the error it ended with. */
  weeded?: string[];
  held?: string[];
  error?: RegExp;
  continued?: true;
}

const ALL = [WEEDER_SAFETY_HOLD_PATCH, WEEDER_REPROPOSE_SKIPPED_PATCH, WEEDER_ARMED_DELETES_PATCH];

const cases: Case[] = [
  {
    situation: 'the window\'s watch finds a crash-looping pod: it is deleted, the watch goes on, the window closes at its deadline',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      await h.answer('weedPods', [deleted('u1')]);
      h.now = T0 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)'],
    weeded: ['u1'],
  },
  {
    situation: 'observe mode recorded the deletion: asked again with a hold as long as the window has left, at most WEED_HOLD_MS',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      h.now = T0 + WATCH_MS - 60_000;
      await h.answer('weedPods', [observed('u1')]);
      await h.answer('weedPods', [deleted('u1')]);
      h.now = T0 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)', 'weedPods(u1 hold 60000)'],
    weeded: ['u1'],
  },
  {
    situation: 'observed, in a history from before the hold: not asked again, nothing deleted',
    patches: [WEEDER_REPROPOSE_SKIPPED_PATCH, WEEDER_ARMED_DELETES_PATCH],
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      await h.answer('weedPods', [observed('u1')]);
      h.now = T0 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)'],
    weeded: [],
  },
  {
    situation: 'the pause holds the deletion and the window closes meanwhile: held, not deleted',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      await h.answer('weedPods', [{ uid: 'u1', outcome: 'held', reason: 'paused' }]);
      h.now = T0 + WATCH_MS;
      await h.answer('weedPods', [{ uid: 'u1', outcome: 'held', reason: 'paused' }]);
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)', `weedPods(u1 hold ${Math.min(WEED_HOLD_MS, WATCH_MS)})`],
    weeded: [],
    held: ['u1'],
  },
  {
    situation: 'a pod skipped at its first ask restarts the window\'s watch (which proposes it again if it crash-loops again)',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      await h.answer('weedPods', [{ uid: 'u1', outcome: 'skipped', reason: 'recovered' }]);
      h.now = T0 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)', 'watchDependants(window)'],
    weeded: [],
  },
  {
    situation: 'a deletion whose answer is lost: the pods are looked at, and one found gone counts as deleted',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      await h.fail('weedPods', new Error('worker lost'));
      await h.answer('checkPods', [{ uid: 'u1', seen: 'gone' }]);
      h.now = T0 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)', 'checkPods(u1)'],
    weeded: ['u1'],
  },
  {
    situation: 'the watch is refused (the Service is not configured): the run ends with the refusal',
    script: async (h) => h.fail('watchDependants', new Refused('not configured')),
    asked: ['watchDependants(window)'],
    error: /^not configured$/,
  },
  {
    situation: 'the watch gives up: the window fails, naming the Service and why',
    script: async (h) => h.fail('watchDependants', new Error('forbidden')),
    asked: ['watchDependants(window)'],
    error: /^weeder window failed: the window's watch of ns\/db gave up: forbidden$/,
  },
  {
    situation: 'a stop while a deletion is under way: the watch is cancelled, the deletion\'s answer waited for, nothing more asked',
    script: async (h) => {
      await h.answer('watchDependants', found(pod(1)));
      h.run.stop({ reason: 'enough' }, 'stop signal');
      await h.turn();
      // Cancelled before it answered: its pods are looked at.
      await h.answer('checkPods', [{ uid: 'u1', seen: 'present' }]);
    },
    asked: ['watchDependants(window)', 'weedPods(u1)', 'watchDependants(window)', 'checkPods(u1)'],
    weeded: [],
  },
  {
    situation: 'the history grows large: the watch is cancelled and the window goes on in a new run, carried',
    script: async (h) => {
      h.suggested = true;
      await h.turn();
    },
    asked: ['watchDependants(window)'],
    continued: true,
  },
  {
    situation: 'armed: the Service turns ready with the pods the armed watch deleted at once; the window opens from then',
    open: 'armed',
    script: async (h) => {
      h.run.armedWeeding({ token: 'token-1', pods: [pod(2)] });
      await h.answer('watchDependants', { candidates: [], readyAt: T0 + 1000, weeded: [deleted('u2')] });
      h.now = T0 + 1000 + WATCH_MS;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(armed)', 'watchDependants(window)'],
    weeded: ['u2'],
  },
  {
    situation: 'an armedWeeding with another token is ignored, named in the log',
    open: 'armed',
    script: async (h) => {
      h.run.armedWeeding({ token: 'forged', pods: [pod(3)] });
      h.now = T0 + 3600_000;
      await h.answer('watchDependants', found());
    },
    asked: ['watchDependants(armed)'],
    weeded: [],
  },
];

describe('weeder: a window\'s run (WindowRun), situation by situation', () => {
  for (const c of cases) {
    it(c.situation, async () => {
      const h = new Harness(c.patches ?? ALL, c.open ?? 'window');
      let ended: { result?: WeederResult; error?: unknown } | undefined;
      void h.run.run().then((result) => (ended = { result }), (error: unknown) => (ended = { error }));
      await h.turn();
      await c.script(h);
      await h.turn();
      assert.deepEqual(h.asked, c.asked);
      assert.ok(ended, `the run has not ended; waiting: ${h.pending.map((p) => p.name).join(', ')}`);
      if (c.error) {
        assert.match((ended.error as Error | undefined)?.message ?? '(no error)', c.error);
      } else if (c.continued) {
        assert.ok(ended.error instanceof ContinuedAsNew, String(ended.error));
        assert.deepEqual((ended.error.input as { namespace: string }).namespace, 'ns');
      } else {
        assert.ok(ended.result, String(ended.error));
        assert.deepEqual(ended.result.weeded.map((p) => p.uid), c.weeded);
        assert.deepEqual(h.state.held.map((p) => p.uid), c.held ?? []);
      }
      if (c.situation.startsWith('an armedWeeding with another token')) assert.match(h.warnings.join('\n'), /armedWeeding signal ignored: its token is not the one/);
    });
  }
});
