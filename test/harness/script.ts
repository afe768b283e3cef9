// Runs one of the repository's scripts (fuzz/run.ts, faults/run.ts) as `npm run` would, for the
// e2e tests that drive them end to end: its exit code and output (a non-zero exit is an answer too),
// its stderr shown as it goes, and a bound past which it is killed and the test fails.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './env.ts';

export interface ScriptRun { code: number | null; stdout: string; stderr: string }

/** `node <script> ...args` from the repository's root; rejected (the script killed) past `timeoutMs`. */
export function runScript(script: string, args: string[], timeoutMs: number): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => {
      stderr += d;
      process.stderr.write(`      ${String(d).trimEnd().replace(/\n/g, '\n      ')}\n`);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${script} did not end within ${timeoutMs / 1000} s, past its own bound\n${stderr.slice(-3000)}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
