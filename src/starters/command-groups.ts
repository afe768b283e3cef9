// The top-level commands whose code lives in modules of their own, and what
// `tend --help` says of each. A command line loads only the module of the
// command it names (the Temporal client, the Kubernetes client, zod: a few
// hundred milliseconds each); `tend --help` lists the others from this table.
// test/unit/starters-cli.test.ts checks that this table says what the loaded
// commands say.
import type { Command } from 'commander';

export interface CommandGroup {
  /** The top-level commands the module registers. */
  names: readonly string[];
  /** Each one's line in `tend --help`: the term (name, [options], arguments) and the description. */
  help: Readonly<Record<string, { term: string; description: string }>>;
  load: () => Promise<(program: Command) => void>;
}

export const COMMAND_GROUPS: readonly CommandGroup[] = [
  {
    names: ['weeder'],
    help: { weeder: { term: 'weeder', description: 'weeder windows: crash-looping dependants deleted when their Service recovers' } },
    load: async () => (await import('./weeder-commands.ts')).registerWeederCommands,
  },
  {
    names: ['app'],
    help: { app: { term: 'app', description: 'App revisions: start, stop and restart Apps (apps.tend.dev), see their status' } },
    load: async () => (await import('./apps-commands.ts')).registerAppCommands,
  },
  {
    names: ['repair-queue'],
    help: { 'repair-queue': { term: 'repair-queue', description: "CKE's repair queue: machine repairs as durable workflows (ckecli repair-queue verbs)" } },
    load: async () => (await import('./repair-commands.ts')).registerRepairCommands,
  },
  {
    names: ['taint'],
    help: { taint: { term: 'taint', description: 'taint replacement: managed pods on tainted nodes, marked then replaced' } },
    load: async () => (await import('./taint-commands.ts')).registerTaintCommands,
  },
  {
    names: ['node'],
    help: { node: { term: 'node', description: "one view of a Node's incident: what each capability did for it, in time order" } },
    load: async () => (await import('./node-commands.ts')).registerNodeCommands,
  },
  {
    names: ['rbac'],
    help: { rbac: { term: 'rbac [options]', description: "print the Roles, ClusterRoles and bindings the configuration's capabilities need (YAML, for kubectl apply)" } },
    load: async () => (await import('./rbac-commands.ts')).registerRbacCommands,
  },
  {
    names: ['pause', 'resume'],
    help: {
      pause: {
        term: 'pause [options] [capability...]',
        description: 'stop every destructive action of the named capabilities (weeder, taint, apps, repair; all when none), cluster-wide, ' +
          'until `tend resume`; durable (kept by the tend-safety workflow)',
      },
      resume: { term: 'resume [options] [capability...]', description: 'let paused capabilities act again (all when none named); what fell due while paused acts at once' },
    },
    load: async () => (await import('./safety-commands.ts')).registerSafetyCommands,
  },
  {
    names: ['setup'],
    help: { setup: { term: 'setup', description: 'prepare what tend needs on a Temporal server' } },
    load: async () => (await import('./setup-commands.ts')).registerSetupCommands,
  },
];

/** The group `name` belongs to, if a module of its own registers it. */
export const groupOf = (name: string | undefined) => COMMAND_GROUPS.find((g) => name !== undefined && g.names.includes(name));
