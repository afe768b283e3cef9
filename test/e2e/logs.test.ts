// `tend run --log-format text` end to end (docs/logging.md): every line it writes, its own and the
// Temporal SDK's (the Rust core's, forwarded, among them), is one readable line: the time, the
// level, the message, then key=value fields; the flag wins over TEND_LOG_FORMAT.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { TendProcess } from '../harness/cli.ts';
import { sandbox } from '../harness/hooks.ts';
import { waitFor } from '../harness/wait.ts';

const TIME = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;
const TEXT_LINE = new RegExp(`^${TIME} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \\S`);
const TASK_QUEUE = 'tend-logs';

describe('logs: `tend run --log-format text`', function () {
  this.timeout(240_000);
  let tend: TendProcess | undefined;
  let dir: string;
  let config: string;
  // No capability, a task queue of its own: nothing started that another test would find.
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tend-logs-'));
    config = join(dir, 'tend.yaml');
    await writeFile(config, toYaml({ temporal: { address: sandbox().temporalAddress, taskQueue: TASK_QUEUE }, kubernetes: { kubeconfig: sandbox().tendKubeconfig } }));
  });
  after(async () => {
    await tend?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("writes tend's lines and the SDK's as text, one line a record", async () => {
    tend = new TendProcess(['run', '--config', config, '--log-format', 'text'], { TEND_LOG_LEVEL: 'info', TEND_LOG_FORMAT: 'json' });
    const t = tend;
    // The SDK hands the core's lines on in batches: its worker's start may come after tend's.
    await waitFor("tend's worker start and the core's", () =>
      (t.output.includes(' worker started ') && t.output.includes(' Initializing worker ')) || (t.exited && Promise.reject(new Error(t.output))),
    { timeoutMs: 120_000 });
    assert.equal(await t.stop(), 0, t.output.slice(-4000));
    const lines = t.output.split('\n').filter((l) => l !== '');
    for (const line of lines) assert.match(line, TEXT_LINE);
    const started = lines.find((l) => / worker started /.test(l));
    assert.match(started!, new RegExp(`^${TIME} INFO  worker started .*taskQueue=${TASK_QUEUE} `));
    const core = lines.find((l) => / Initializing worker /.test(l));
    assert.match(core!, new RegExp(`^${TIME} INFO  Initializing worker .*\\btaskQueue=${TASK_QUEUE} .*\\bsource=temporal-core$`));
    assert.match(lines.at(-1)!, new RegExp(`^${TIME} INFO  `), 'the last line too, written as tend stops');
  });
});
