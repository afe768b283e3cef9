// The sandbox a fault run or a fuzzer run works on: the one running in its
// state folder, reused, or one started there (three Nodes, time scaled down),
// with kube-apiserver's audit log turned on either way (the invariants count
// from it).
import { currentSandbox, enableAuditLog, status, up, type SandboxInfo } from '../src/sandbox/sandbox.ts';
import { AuditLog } from './audit.ts';

/** The sandbox in `stateDir` (started with ports moved by `offset` when none runs there) and its audit log. */
export async function auditedSandbox(stateDir: string, offset: number, say: (m: string) => void): Promise<{ info: SandboxInfo; audit: AuditLog }> {
  const p = (port: number) => port + offset;
  const progress = (m: string) => say(`sandbox: ${m}`);
  if (!(await status(stateDir)).every((c) => c.running) || !(await currentSandbox(stateDir))) {
    await up({
      stateDir,
      settings: {
        nodes: 3, timeScale: 0.1, nodeMonitorGraceSeconds: 8, auditLog: true,
        ports: { etcdClient: p(24790), etcdPeer: p(25800), apiserver: p(17443), controllerManager: p(11357), scheduler: p(11359), temporal: p(7333), temporalUi: p(8333) },
      },
      progress,
    });
  }
  const audit = new AuditLog(await enableAuditLog(stateDir, progress));
  // Read again: turning the audit log on may have restarted kube-apiserver.
  return { info: (await currentSandbox(stateDir))!, audit };
}
