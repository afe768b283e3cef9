// The apps section of the configuration file.
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/config/errors.ts';

describe('apps: config section', () => {
  it('is off when absent, on when present (every namespace when none is listed)', () => {
    assert.equal(parseConfig('temporal: { address: "localhost:7233" }\n', 'x').apps, undefined);
    assert.deepEqual(parseConfig('apps: {}\n', 'x').apps, {});
    assert.deepEqual(parseConfig('apps: { namespaces: [demo] }\n', 'x').apps, { namespaces: ['demo'] });
  });

  it('refuses bad namespaces and unknown fields, by path', () => {
    const err = (() => {
      try {
        parseConfig('apps:\n  namespaces: [Not_A_Namespace]\n  namespace: demo\n', 'x');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(err instanceof ConfigError);
    assert.match(err.message, /apps\.namespaces\[0\]/);
    assert.match(err.message, /apps\.namespace\b/);
  });
});
