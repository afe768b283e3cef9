// The real `temporal` CLI against the test sandbox's server, as an operator
// would type it.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureBinaries } from '../../src/sandbox/binaries.ts';
import { sandbox } from './hooks.ts';
import { spawned } from './cli.ts';

export async function temporalCli(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const bin = (await ensureBinaries()).temporal;
  spawned.temporalCalls++;
  return promisify(execFile)(bin, [...args, '--address', sandbox().temporalAddress], { timeout: 60_000 });
}
