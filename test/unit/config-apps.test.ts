// The apps section of the configuration file (src/config/apps.ts), and the Apps it lets a worker act
// on (appScopeProblem, src/activities/apps.ts).
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { appScopeProblem } from '../../src/activities/apps.ts';

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

describe('apps: which Apps a worker may act on', () => {
  it('any namespace with apps: {}, only the listed ones with namespaces, none without the section', () => {
    assert.equal(appScopeProblem({}, 'anything', 'web'), undefined);
    assert.equal(appScopeProblem({ namespaces: ['demo'] }, 'demo', 'web'), undefined);
    assert.match(appScopeProblem({ namespaces: ['demo'] }, 'prod', 'web')!, /App prod\/web: namespace prod is outside apps.namespaces \(demo\)/);
    assert.match(appScopeProblem(undefined, 'demo', 'web')!, /no apps section/);
    assert.match(appScopeProblem({}, 42, 'web')!, /named by namespace and name/);
    assert.match(appScopeProblem({}, 'demo', 'Bad/Name')!, /named by namespace and name/);
  });
});
