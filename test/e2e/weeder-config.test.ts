// A bad weeder section is refused by the real CLI with every problem named by
// its path, exit code 2, and nothing started.
import assert from 'node:assert/strict';
import { runTend } from '../harness/cli.ts';
import { weederConfigFile } from '../harness/weeder.ts';

describe('weeder: bad configuration', () => {
  const cases: [string, Record<string, unknown>, RegExp[]][] = [
    ['empty podSelectors', { servicesAndDependantSelectors: { etcd: { podSelectors: [] } } },
      [/weeder\.servicesAndDependantSelectors\.etcd\.podSelectors: must list at least one pod selector/]],
    ['unknown operator', { servicesAndDependantSelectors: { etcd: { podSelectors: [{ matchExpressions: [{ key: 'role', operator: 'Inn', values: ['x'] }] }] } } },
      [/weeder\.servicesAndDependantSelectors\.etcd\.podSelectors\[0\]\.matchExpressions\[0\]\.operator: .*In, NotIn, Exists, DoesNotExist/]],
    ['bad duration', { watchDuration: '5 minutes', servicesAndDependantSelectors: { etcd: { podSelectors: [{ matchLabels: { role: 'x' } }] } } },
      [/weeder\.watchDuration: must be a Go duration/]],
    ['all three at once', {
      watchDuration: '-1s',
      servicesAndDependantSelectors: {
        a: { podSelectors: [] },
        b: { podSelectors: [{ matchExpressions: [{ key: 'role', operator: 'Within' }] }] },
      },
    }, [/weeder\.watchDuration/, /weeder\.servicesAndDependantSelectors\.a\.podSelectors/, /weeder\.servicesAndDependantSelectors\.b\.podSelectors\[0\]\.matchExpressions\[0\]\.operator/]],
  ];
  for (const [name, weeder, problems] of cases) {
    it(`${name}: tend config validate and tend run refuse it with its path, exit 2`, async () => {
      const file = await weederConfigFile(weeder);
      for (const args of [['config', 'validate', file], ['run', '--config', file]]) {
        const r = await runTend(args, { timeoutMs: 30_000 });
        assert.equal(r.code, 2, `tend ${args[0]}: ${r.stderr}`);
        for (const p of problems) assert.match(r.stderr, p);
        assert.doesNotMatch(r.stderr, /worker started|watcher started/, 'nothing started');
      }
    });
  }
});
