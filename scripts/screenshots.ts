// `npm run screenshots`: the pictures of docs/web-ui.md, taken from the real Web UI by the browser
// lane's own run (test/browser, with TEND_SCREENSHOTS set: each test saves its pages as
// docs/images/web-ui-*.png while it checks them). The old pictures go first, so that none outlives
// the test that took it; a failed lane leaves what it took and exits non-zero.
//
//   node scripts/screenshots.ts     (needs what the browser lane needs: Chromium, the sandbox's binaries)
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const images = join(repoRoot, 'docs', 'images');
const ours = () => readdirSync(images).filter((f) => f.startsWith('web-ui-') && f.endsWith('.png')).sort();

for (const f of ours()) rmSync(join(images, f));
const run = spawnSync(process.execPath, [join(repoRoot, 'scripts', 'test.ts'), '--lane', 'browser'], {
  cwd: repoRoot, stdio: 'inherit', env: { ...process.env, TEND_SCREENSHOTS: '1' },
});
for (const f of ours()) console.log(`screenshots: docs/images/${f} (${Math.round(statSync(join(images, f)).size / 1024)} KiB)`);
process.exit(run.status ?? 1);
