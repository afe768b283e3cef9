import assert from 'node:assert/strict';
import { labelKeyProblem, labelValueProblem } from '../../src/config/kube-names.ts';
import { labelSelectorSchema, matches, toSelectorString, type LabelSelector, type Labels } from '../../src/config/label-selector.ts';

const role = (operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', values?: string[]): LabelSelector => ({
  matchExpressions: [{ key: 'role', operator, ...(values && { values }) }],
});

describe('config: label selectors', () => {
  describe('matches', () => {
    const cases: { name: string; selector: LabelSelector; labels?: Labels; want: boolean }[] = [
      { name: 'matchLabels equal', selector: { matchLabels: { app: 'db' } }, labels: { app: 'db', tier: 'x' }, want: true },
      { name: 'matchLabels different value', selector: { matchLabels: { app: 'db' } }, labels: { app: 'web' }, want: false },
      { name: 'matchLabels key absent', selector: { matchLabels: { app: 'db' } }, labels: {}, want: false },
      { name: 'matchLabels every pair', selector: { matchLabels: { app: 'db', tier: 'x' } }, labels: { app: 'db' }, want: false },
      { name: 'matchLabels empty value', selector: { matchLabels: { canary: '' } }, labels: { canary: '' }, want: true },
      { name: 'In, value listed', selector: role('In', ['apiserver', 'etcd']), labels: { role: 'etcd' }, want: true },
      { name: 'In, value not listed', selector: role('In', ['apiserver']), labels: { role: 'etcd' }, want: false },
      { name: 'In, key absent', selector: role('In', ['apiserver']), labels: {}, want: false },
      { name: 'NotIn, value listed', selector: role('NotIn', ['main']), labels: { role: 'main' }, want: false },
      { name: 'NotIn, value not listed', selector: role('NotIn', ['main']), labels: { role: 'apiserver' }, want: true },
      { name: 'NotIn, key absent', selector: role('NotIn', ['main']), labels: {}, want: true },
      { name: 'Exists, present', selector: role('Exists'), labels: { role: '' }, want: true },
      { name: 'Exists, absent', selector: role('Exists'), labels: { other: 'role' }, want: false },
      { name: 'DoesNotExist, absent', selector: role('DoesNotExist'), labels: {}, want: true },
      { name: 'DoesNotExist, present', selector: role('DoesNotExist'), labels: { role: 'x' }, want: false },
      { name: 'no labels at all', selector: role('DoesNotExist'), labels: undefined, want: true },
      { name: 'inherited properties are not labels', selector: role('Exists'), labels: Object.create({ role: 'x' }) as Labels, want: false },
      {
        name: 'every term must hold',
        selector: {
          matchLabels: { app: 'kube-apiserver' },
          matchExpressions: [
            { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
            { key: 'role', operator: 'NotIn', values: ['main'] },
          ],
        },
        labels: { app: 'kube-apiserver', 'gardener.cloud/role': 'controlplane', role: 'main' },
        want: false,
      },
      {
        name: 'every term holds',
        selector: {
          matchLabels: { app: 'kube-apiserver' },
          matchExpressions: [
            { key: 'gardener.cloud/role', operator: 'In', values: ['controlplane'] },
            { key: 'role', operator: 'NotIn', values: ['main'] },
          ],
        },
        labels: { app: 'kube-apiserver', 'gardener.cloud/role': 'controlplane', role: 'apiserver' },
        want: true,
      },
    ];
    for (const { name, selector, labels, want } of cases) {
      it(`${name}: ${want}`, () => assert.equal(matches(selector, labels), want));
    }
  });

  describe('toSelectorString', () => {
    const cases: { selector: LabelSelector; want: string }[] = [
      { selector: { matchLabels: { a: 'b' } }, want: 'a=b' },
      { selector: { matchLabels: { a: '' } }, want: 'a=' },
      {
        selector: {
          matchLabels: { a: 'b' },
          matchExpressions: [
            { key: 'd', operator: 'DoesNotExist' },
            { key: 'c', operator: 'In', values: ['y', 'x'] },
          ],
        },
        want: 'a=b,c in (x,y),!d',
      },
      { selector: role('NotIn', ['main', 'apiserver', 'main']), want: 'role notin (apiserver,main)' },
      { selector: role('Exists'), want: 'role' },
      {
        selector: { matchLabels: { 'app.kubernetes.io/name': 'db', tier: 'x' }, matchExpressions: [{ key: 'b', operator: 'Exists' }] },
        want: 'app.kubernetes.io/name=db,b,tier=x',
      },
    ];
    for (const { selector, want } of cases) {
      it(want, () => assert.equal(toSelectorString(selector), want));
    }
  });

  describe('labelSelectorSchema', () => {
    it('accepts a valid selector unchanged', () => {
      const selector = { matchLabels: { app: 'db' }, matchExpressions: [{ key: 'role', operator: 'In', values: ['a'] }] };
      assert.deepEqual(labelSelectorSchema.parse(selector), selector);
    });

    for (const [name, selector, path] of [
      ['empty', {}, ''],
      ['an unknown field', { matchLabels: { a: 'b' }, matchFields: [] }, ''],
      ['In without values', role('In'), 'matchExpressions.0.values'],
      ['Exists with values', role('Exists', ['x']), 'matchExpressions.0.values'],
      ['a bad key', { matchLabels: { 'a b': 'c' } }, 'matchLabels.a b'],
    ] as const) {
      it(`refuses ${name}`, () => {
        const result = labelSelectorSchema.safeParse(selector);
        assert.equal(result.success, false);
        assert.deepEqual(result.error!.issues.map((issue) => issue.path.join('.')), [path]);
      });
    }
  });

  describe('label syntax', () => {
    const long = (n: number) => 'a'.repeat(n);
    const keys: [key: string, problem: string | undefined][] = [
      ['app', undefined],
      ['app.kubernetes.io/name', undefined],
      ['example.org/maintenance', undefined],
      ['A_b.c-D', undefined],
      [long(63), undefined],
      [`${long(253)}/x`, undefined],
      [`${long(254)}/x`, 'its prefix must be at most 253 characters'],
      [long(64), 'its name must be at most 63 characters'],
      ['', 'the name must not be empty'],
      ['app/', 'the name must not be empty'],
      ['/app', 'the prefix before "/" must not be empty'],
      ['a/b/c', 'at most one "/" prefix'],
      ['Example.org/x', 'its prefix must be a DNS-1123 subdomain'],
      ['-app', 'its name must be letters, digits'],
      ['app.', 'its name must be letters, digits'],
      ['a b', 'its name must be letters, digits'],
    ];
    for (const [key, problem] of keys) {
      it(`key ${JSON.stringify(key.length > 20 ? `${key.slice(0, 20)}…` : key)}: ${problem ?? 'valid'}`, () => {
        const got = labelKeyProblem(key);
        if (problem === undefined) assert.equal(got, undefined);
        else assert.ok(got?.includes(problem), got);
      });
    }

    const values: [value: string, problem: string | undefined][] = [
      ['', undefined],
      ['v1.0', undefined],
      ['Controlplane_2', undefined],
      [long(63), undefined],
      [long(64), 'at most 63 characters'],
      ['a b', 'empty, or letters, digits'],
      ['-a', 'empty, or letters, digits'],
      ['a/b', 'empty, or letters, digits'],
    ];
    for (const [value, problem] of values) {
      it(`value ${JSON.stringify(value.length > 20 ? `${value.slice(0, 20)}…` : value)}: ${problem ?? 'valid'}`, () => {
        const got = labelValueProblem(value);
        if (problem === undefined) assert.equal(got, undefined);
        else assert.ok(got?.includes(problem), got);
      });
    }
  });
});
