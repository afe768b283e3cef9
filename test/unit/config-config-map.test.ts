// src/config/config-map.ts: which labelled ConfigMap `--config-map` reads when the name it was
// given is not found (kustomize's hash suffix), or when it was given a namespace alone.
import assert from 'node:assert/strict';
import { chooseConfigMap } from '../../src/config/config-map.ts';

describe('chooseConfigMap', () => {
  const rows: { name: string; wanted?: string; labelled: string[]; use?: string; problem?: RegExp }[] = [
    { name: "the one labelled whose name is the name given and kustomize's suffix", wanted: 'tend-config', labelled: ['tend-config-5f8h2k9c7b', 'other-config-1'], use: 'tend-config-5f8h2k9c7b' },
    { name: 'a labelled one that only shares a prefix without "-" is not taken', wanted: 'tend-config', labelled: ['tend-configx'], problem: /^ConfigMap tend-system\/tend-config not found, nor one labelled tend\.dev\/config=true whose name starts with tend-config-$/ },
    { name: 'none labelled: the name given, not found', wanted: 'tend-config', labelled: [], problem: /^ConfigMap tend-system\/tend-config not found, nor one labelled/ },
    {
      name: 'two whose name starts so: refused, both named, in order', wanted: 'tend-config', labelled: ['tend-config-bbb', 'tend-config-aaa', 'x-1'],
      problem: /^ConfigMap tend-system\/tend-config not found, and 2 labelled tend\.dev\/config=true start with tend-config-: tend-config-aaa, tend-config-bbb; name the one to read: --config-map tend-system\/NAME:KEY$/,
    },
    { name: 'no name given: the one labelled ConfigMap of the namespace', labelled: ['anything-1'], use: 'anything-1' },
    { name: 'no name given, none labelled', labelled: [], problem: /^no ConfigMap in namespace tend-system is labelled tend\.dev\/config=true/ },
    { name: 'no name given, two labelled: refused, both named', labelled: ['b', 'a'], problem: /^2 ConfigMaps in namespace tend-system are labelled tend\.dev\/config=true: a, b; name the one/ },
    {
      name: 'many: the first ten named, and how many more',
      labelled: Array.from({ length: 13 }, (_, i) => `c-${String(i).padStart(2, '0')}`),
      problem: /: c-00, c-01, c-02, c-03, c-04, c-05, c-06, c-07, c-08, c-09 and 3 more; /,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const choice = chooseConfigMap('tend-system', row.wanted, row.labelled);
      if (row.use !== undefined) {
        assert.deepEqual(choice, { use: row.use });
      } else {
        assert.ok('problem' in choice, JSON.stringify(choice));
        assert.match(choice.problem, row.problem!);
      }
    });
  }
});
