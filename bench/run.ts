// `npm run bench [-- NAME...]`: runs the named benchmarks (every one when none
// is named), each in its own process on its own sandbox, one after another so
// that they do not compete for the machine.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const dir = fileURLToPath(new URL('.', import.meta.url));
const all = readdirSync(dir).filter((f) => f.endsWith('.ts') && f !== 'run.ts').map((f) => f.slice(0, -3)).sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length) {
  console.error(`bench: no benchmark named ${unknown.join(', ')}; there are: ${all.join(', ')}`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length ? wanted : all) {
  console.log(`\n=== bench ${name}`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(dir, `${name}.ts`)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
