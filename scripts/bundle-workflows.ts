// `npm run bundle`: bundles tend's workflow code once, to dist/workflow-bundle.js (and its sources'
// fingerprint), so that workers start without bundling (src/workers/worker.ts).
import { writeWorkflowBundle } from '../src/workers/worker.ts';

const { path, bytes } = await writeWorkflowBundle(process.argv[2]);
console.log(`wrote ${path} (${Math.round(bytes / 1024)} KiB)`);
