// `npm run bundle`: bundles tend's workflow code once, to dist/workflow-bundle.js (and its sources'
// fingerprint), so that workers start without bundling (src/workers/worker.ts).
//
//   node scripts/bundle-workflows.ts [PATH] [--if-stale]
//
// --if-stale: only when the bundle at PATH is missing or not of the current sources (the test
// run's first step: every tend a test starts then loads it, as the image's does).
import { parseArgs } from 'node:util';
import { ensureWorkflowBundle, workflowBundlePath, writeWorkflowBundle } from '../src/workers/worker.ts';

const { values, positionals } = parseArgs({ options: { 'if-stale': { type: 'boolean', default: false } }, allowPositionals: true });
const target = positionals[0] ?? workflowBundlePath;
if (values['if-stale']) {
  const { written } = await ensureWorkflowBundle(target);
  console.log(written ? `wrote ${target}` : `${target} is of the current sources`);
} else {
  const { path, bytes } = await writeWorkflowBundle(target);
  console.log(`wrote ${path} (${Math.round(bytes / 1024)} KiB)`);
}
