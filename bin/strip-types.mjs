// Loaded first (node --import) by bin/tend when tend runs as an installed npm package: Node.js
// strips TypeScript's types itself, but never for a file under node_modules (it refuses with
// ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING), and `npm install -g` puts tend there. So tend's own
// .ts files (this package's, and only those) are stripped here with Node's own stripper, the same
// erasable-syntax-only transform it applies to a checkout (docs/release.md).
import { registerHooks, stripTypeScriptTypes } from 'node:module';
import { readFileSync } from 'node:fs';

const own = new URL('..', import.meta.url).href;

// Node.js warns once that its stripper is experimental; the same stripper runs in a checkout
// without a word, so the warning says nothing an operator can act on.
const emitWarning = process.emitWarning;
process.emitWarning = () => {};
try {
  stripTypeScriptTypes('');
} finally {
  process.emitWarning = emitWarning;
}

registerHooks({
  load(url, context, nextLoad) {
    // Not tend's own dependencies: node_modules/tend/node_modules/... is theirs, and has no .ts to run.
    if (url.startsWith(own) && url.endsWith('.ts') && !url.slice(own.length).includes('node_modules/')) {
      return { format: 'module', source: stripTypeScriptTypes(readFileSync(new URL(url), 'utf8')), shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});
