// Makes a checkout runnable: installs the npm dependencies (which include the
// project's own Node.js 24 for machines whose Node is older) when they are
// missing or older than package-lock.json. `npm install` rather than `npm ci`: it keeps what is
// already installed, so a refresh is quick; both install the locked versions (the lock lists every
// platform's optional packages, so `npm ci`, which the Dockerfile uses, accepts it too). Plain
// JavaScript on purpose: it runs on whatever Node the machine has, before that one is installed.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const lock = join(root, 'package-lock.json');
const stamp = join(root, 'node_modules', '.tend-installed');
const node = join(root, 'node_modules', '.bin', 'node');

const stale = !existsSync(stamp) || !existsSync(node) || statSync(lock).mtimeMs > statSync(stamp).mtimeMs;
if (stale) {
  console.error('setup: installing dependencies (npm install)');
  execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 2, 2] });
  writeFileSync(stamp, new Date().toISOString() + '\n');
}
