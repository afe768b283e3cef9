// Runs the simulated kubelet until SIGTERM or SIGINT:
//   node src/sandbox/kubelet/main.ts --kubeconfig PATH [--nodes 3] [--time-scale 1]
//        [--heartbeat-seconds 10] [--name-prefix sim-] [--run-images PREFIX,... --pods-dir DIR]
// --run-images: pods whose every image starts with one of the prefixes run for real, with podman
// (podman-pod.ts); their files go in --pods-dir.
import { parseArgs } from 'node:util';
import { log } from '../../log.ts';
import { startKubelet } from './index.ts';

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: main.ts --kubeconfig PATH [--nodes N] [--time-scale F] [--heartbeat-seconds S] [--name-prefix P] [--run-images PREFIX,... --pods-dir DIR]\n`,
  );
  process.exit(2);
}

function number(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) usage(`--${name}: not a number: ${value}`);
  return n;
}

let args;
try {
  args = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      nodes: { type: 'string' },
      'time-scale': { type: 'string' },
      'heartbeat-seconds': { type: 'string' },
      'name-prefix': { type: 'string' },
      'run-images': { type: 'string' },
      'pods-dir': { type: 'string' },
    },
    strict: true,
  }).values;
} catch (err) {
  usage(err instanceof Error ? err.message : String(err));
}
if (!args.kubeconfig) usage('--kubeconfig is required');
const runImages = (args['run-images'] ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
if (runImages.length > 0 && !args['pods-dir']) usage('--run-images needs --pods-dir');

try {
  const kubelet = await startKubelet({
    kubeconfig: args.kubeconfig,
    nodes: number('nodes', args.nodes),
    timeScale: number('time-scale', args['time-scale']),
    heartbeatSeconds: number('heartbeat-seconds', args['heartbeat-seconds']),
    namePrefix: args['name-prefix'],
    runImages,
    podsDir: args['pods-dir'],
  });
  log.info({ nodes: kubelet.nodes }, `simulated kubelet: ${kubelet.nodes.length} nodes registered`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'simulated kubelet: stopping');
    kubelet.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'simulated kubelet: stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  log.error({ err: err instanceof Error ? err.message : String(err) }, 'simulated kubelet: cannot start');
  process.exit(1);
}
