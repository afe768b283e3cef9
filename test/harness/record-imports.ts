// Loaded with `node --import` by test/unit/starters-cli.test.ts: records every package a process
// loads (by name) and writes them, one per line, to the file TEND_RECORD_IMPORTS names when it exits.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const loaded = new Set<string>();
registerHooks({
  load(url, context, next) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (m) loaded.add(m[1]!);
    return next(url, context);
  },
});
process.on('exit', () => writeFileSync(process.env.TEND_RECORD_IMPORTS!, [...loaded].sort().join('\n')));
