import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * The layers of src/, lowest first. A folder imports only from the layers below its own: never
 * from a layer above, nor from another folder of its own layer. The order is what the code does:
 *   - the ground floor: the files at src/'s root (log.ts, errors.ts: the errors every layer
 *     shares, sleep.ts, pool.ts, latest.ts, search-attributes.ts);
 *   - checks (bounded readings of untrusted values) and http (the health server), which need
 *     nothing else of tend;
 *   - kube: the Kubernetes client, its prepared requests, writes and informer;
 *   - config: the configuration's schema and loader (it reads a ConfigMap through kube);
 *   - temporal: connections to Temporal and the readers of workflows found by id;
 *   - the capabilities' pure cores, apart from one another: apps, noderepair, repair, taint, weeder;
 *   - metrics (its state reads the capabilities' queries);
 *   - safety (pause and modes, counted in metrics) and rbac (the rights a configuration needs);
 *   - sandbox: the local cluster (its bootstrap applies rbac's objects);
 *   - activities, then workflows (which import activities' types only, and no Node built-ins),
 *     then workers (the worker hosts both), then starters (the CLI: everything).
 * scripts/import-graph.ts checks the same order over every import, dynamic ones included, and
 * that the graph has no circle; test/unit/layering.test.ts proves each rule is reported.
 */
export const layers = [
  ['.'],
  ['checks', 'http'],
  ['kube'],
  ['config'],
  ['temporal'],
  ['apps', 'noderepair', 'repair', 'taint', 'weeder'],
  ['metrics'],
  ['safety', 'rbac'],
  ['sandbox'],
  ['activities'],
  ['workflows'],
  ['workers'],
  ['starters'],
];

/** The folders `folder` must not import: every other folder of its layer and of the layers above. */
function forbiddenFor(folder) {
  const at = layers.findIndex((layer) => layer.includes(folder));
  return layers.slice(at).flat().filter((f) => f !== folder && f !== '.');
}

/** What a folder may import, said in the lint message. */
const allowedFor = (folder) => {
  const at = layers.findIndex((layer) => layer.includes(folder));
  return layers.slice(0, at).flat().map((f) => (f === '.' ? "src/'s root files" : f)).join(', ');
};

// A relative import that climbs out of the folder (`../x/`, or `../../x/` from a subfolder such
// as sandbox/kubelet) into one of `folders`. `\x2F` is "/": esquery's regex selectors take no "/".
const climbsInto = (folders, slash = '/') => `^(\\.\\.${slash})+(${folders.join('|')})${slash}`;

/** The per-folder layer rule: static imports and re-exports (no-restricted-imports), and `import('...')`. */
function layerRules(folder, extra = {}) {
  const forbidden = forbiddenFor(folder);
  const message = `src/${folder} imports only from the layers below it: ${allowedFor(folder)} (eslint.config.js's layers)`;
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': ['error', {
        ...(extra.paths ? { paths: extra.paths } : {}),
        patterns: [{ regex: climbsInto(forbidden), message }, ...(extra.patterns ?? [])],
      }],
      'no-restricted-syntax': ['error', {
        selector: `ImportExpression > Literal.source[value=/${climbsInto(forbidden, '\\x2F')}/]`,
        message,
      }],
    },
  };
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', '.tend/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // The ground floor imports no folder of src/.
    files: ['src/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^\\./[^/]+/', message: "src/'s root files are the ground floor: they import no folder of src/" }] }],
      'no-restricted-syntax': ['error', { selector: 'ImportExpression > Literal.source[value=/^\\.\\x2F[^\\x2F]+\\x2F/]', message: "src/'s root files are the ground floor: they import no folder of src/" }],
    },
  },
  ...layers.flat().filter((folder) => folder !== '.' && folder !== 'workflows' && folder !== 'starters').map((folder) => layerRules(folder)),
  // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no client libraries.
  layerRules('workflows', {
    paths: nodeBuiltins,
    patterns: [{
      group: ['@kubernetes/*', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'],
      message: "workflow code runs in Temporal's deterministic sandbox: no Kubernetes client, no Temporal client, worker or activity context",
    }],
  }),
);
