// `tend run` with no configuration: the quick start. Brings the sandbox up,
// installs the demo workload, and runs tend against it with tend's own
// ServiceAccount credentials.
import { fileURLToPath } from 'node:url';
import { loadConfig, type Config } from '../config/load.ts';
import { up, type SandboxInfo } from '../sandbox/sandbox.ts';
import { applyManifests } from '../sandbox/bootstrap.ts';
import { ensureBinaries, type Binaries } from '../sandbox/binaries.ts';
import { dirname } from 'node:path';

const demoDir = fileURLToPath(new URL('../../deploy/demo', import.meta.url));

/**
 * What `tend run` prints on the sandbox: where things are and what to try. The sandbox's own
 * temporal and kubectl (built into the binary cache) are put on PATH by the export line, so the
 * lines after it work as printed.
 */
export function quickStartHelp(info: Pick<SandboxInfo, 'webUi' | 'kubeconfig' | 'config' | 'temporalAddress'>, bins: Pick<Binaries, 'temporal' | 'kubectl'>): string {
  const path = [...new Set([dirname(bins.temporal), dirname(bins.kubectl)])].join(':');
  return [
    '',
    'tend is running on the local sandbox.',
    `  Temporal Web UI   ${info.webUi}`,
    `  kubeconfig        ${info.kubeconfig}`,
    `  tend config       ${info.config}`,
    '',
    'Try next, in another shell:',
    `  export KUBECONFIG=${info.kubeconfig} TEMPORAL_ADDRESS=${info.temporalAddress} PATH=${path}:$PATH`,
    '  kubectl get nodes,pods -A                    # the simulated nodes and the demo workload',
    '  ./bin/tend doctor                            # a workflow through Temporal, the worker and Kubernetes',
    '  ./bin/tend sandbox node stop sim-2           # stop a node\'s heartbeats: it gets tainted unreachable',
    '  ./bin/tend app restart demo/hello            # stop + start an App: new Deployment, new pods',
    '  ./bin/tend repair-queue add reboot sim 10.88.0.2 && ./bin/tend repair-queue wait --finished   # drain, repair, health check',
    '  ./bin/tend weeder list                       # open weeder windows (fail etcd: see docs/weeder.md)',
    '  kubectl taint node sim-1 example.org/maintenance=:NoSchedule && ./bin/tend taint status   # managed pods replaced after 60 s',
    '  temporal workflow list                       # what tend ran',
    '',
    'Ctrl-C stops tend; `./bin/tend sandbox down` stops the sandbox.',
    '',
  ].join('\n');
}

export async function runOnSandbox(signal: AbortSignal, run: (config: Config) => Promise<void>): Promise<void> {
  const say = (m: string) => console.error(`sandbox: ${m}`);
  say('no configuration given: using the local sandbox');
  const info = await up({ progress: say });
  if (signal.aborted) return;
  await applyManifests(info.kubeconfig, demoDir);
  const config = await loadConfig({ file: info.config });
  console.log(quickStartHelp(info, await ensureBinaries()));
  await run(config);
}
