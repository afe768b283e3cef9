// The taintReplacement section: the FoundationDB operator's names, defaults,
// and every problem named by its path; the CLI exits 2 on a bad section.
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configProblems } from '../harness/config-error.ts';
import { configWarnings, describeConfig, parseConfig } from '../../src/config/load.ts';
import { IGNORED_DURATION, matchingTaints } from '../../src/taint/match.ts';
import { taintReplacementActive } from '../../src/config/taint-replacement.ts';
import { runTend } from '../harness/cli.ts';

describe('config: taintReplacement', () => {
  it('takes the seed\'s example verbatim, with defaults', () => {
    const c = parseConfig(`
taintReplacement:
  enabled: true
  podSelector: { matchLabels: { app: db } }
  maxConcurrentReplacements: 1
  taintReplacementOptions:
  - key: "example.org/maintenance"
    durationInSeconds: 7200
  - key: "example.org/disconnected"
    durationInSeconds: 1200
  - key: "*"
    durationInSeconds: 3600
  taintReplacementTimeSeconds: 1800
`, 'seed.yaml').taintReplacement!;
    assert.equal(c.taintReplacementOptions.length, 3);
    assert.equal(c.taintReplacementTimeSeconds, 1800);
    assert.deepEqual(c.breaker, { maxTaintedNodes: '50%' });
    assert.ok(taintReplacementActive(c));
  });

  it('defaults: taintReplacementTimeSeconds 1800, maxConcurrentReplacements 1; no options means off', () => {
    const c = parseConfig('taintReplacement: { podSelector: { matchLabels: { app: db } } }', 't.yaml').taintReplacement!;
    assert.equal(c.taintReplacementTimeSeconds, 1800);
    assert.equal(c.maxConcurrentReplacements, 1);
    assert.equal(c.enabled, true);
    assert.ok(!taintReplacementActive(c), 'an empty taintReplacementOptions disables the feature');
  });

  it('enabled: false is off', () => {
    const c = parseConfig('taintReplacement: { enabled: false, podSelector: { matchLabels: { a: b } }, taintReplacementOptions: [ { key: x, durationInSeconds: 1 } ] }', 't.yaml').taintReplacement!;
    assert.ok(!taintReplacementActive(c));
  });

  const bad: { name: string; yaml: string; want: RegExp[] }[] = [
    {
      name: 'negative duration',
      yaml: 'taintReplacement: { podSelector: { matchLabels: { a: b } }, taintReplacementOptions: [ { key: x, durationInSeconds: -5 } ] }',
      want: [/^taintReplacement\.taintReplacementOptions\[0\]\.durationInSeconds: must be 0 or more seconds/],
    },
    {
      name: 'bad key',
      yaml: 'taintReplacement: { podSelector: { matchLabels: { a: b } }, taintReplacementOptions: [ { key: "bad key!", durationInSeconds: 5 }, { key: "a/b/c", durationInSeconds: 1 } ] }',
      want: [/^taintReplacement\.taintReplacementOptions\[0\]\.key: not a valid taint key/, /^taintReplacement\.taintReplacementOptions\[1\]\.key: not a valid taint key/],
    },
    {
      name: 'wrong types',
      yaml: 'taintReplacement: { enabled: "yes", podSelector: { matchLabels: { a: b } }, taintReplacementTimeSeconds: "30m", maxConcurrentReplacements: 1.5, taintReplacementOptions: { key: x } }',
      want: [/^taintReplacement\.enabled:/, /^taintReplacement\.taintReplacementTimeSeconds: must be a whole number/, /^taintReplacement\.maxConcurrentReplacements: must be a whole number/, /^taintReplacement\.taintReplacementOptions:/],
    },
    {
      name: 'missing podSelector, unknown field, duplicate key, bad breaker',
      yaml: 'taintReplacement: { taints: [], taintReplacementOptions: [ { key: x, durationInSeconds: 1 }, { key: x, durationInSeconds: 2 } ], breaker: { maxTaintedNodes: "120%" } }',
      want: [/^taintReplacement\.podSelector:/, /^taintReplacement\.taints:/, /^taintReplacement\.taintReplacementOptions\[1\]\.key: "x" is already listed/, /^taintReplacement\.breaker\.maxTaintedNodes:/],
    },
  ];
  for (const c of bad) {
    it(`refuses ${c.name}, naming each path`, () => {
      const got = configProblems(c.yaml);
      for (const re of c.want) assert.ok(got.some((p) => re.test(p)), `${re} in:\n${got.join('\n')}`);
    });
  }

  it('the CLI refuses a bad section with exit 2 and the path', async function () {
    this.timeout(30_000);
    const file = join(await mkdtemp(join(tmpdir(), 'tend-taint-cfg-')), 'bad.yaml');
    await writeFile(file, 'taintReplacement:\n  podSelector: { matchLabels: { app: db } }\n  taintReplacementOptions:\n    - { key: example.org/maintenance, durationInSeconds: -1 }\n');
    const r = await runTend(['config', 'validate', file]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /taintReplacement\.taintReplacementOptions\[0\]\.durationInSeconds: must be 0 or more seconds/);
    const run = await runTend(['run', '--config', file]);
    assert.equal(run.code, 2);
    assert.doesNotMatch(run.stderr, /worker started/);
  });
});

describe('config: taintReplacement takes FDB\'s whole automationOptions.replacements block', () => {
  // Written from the operator's AutomaticReplacementOptions API: every field, with an ignored key.
  const block = `
taintReplacement:
  podSelector: { matchLabels: { app: fdb } }
  enabled: true
  failureDetectionTimeSeconds: 7200
  taintReplacementTimeSeconds: 1800
  maxConcurrentReplacements: 1
  faultDomainBasedReplacements: true
  maxFaultDomainsWithTaintedProcessGroups: 2
  taintReplacementOptions:
    - key: "*"
      durationInSeconds: 3600
    - key: example.org/maintenance
      durationInSeconds: 9223372036854775807
`;

  it('accepts every field; each one tend does not honour as FDB does gets a warning saying what tend does instead', () => {
    const config = parseConfig(block, 'fdb.yaml');
    const warnings = configWarnings(config);
    assert.equal(warnings.length, 4, warnings.join('\n'));
    assert.match(warnings[0]!, /failureDetectionTimeSeconds: accepted, not used: .*repair queue/);
    assert.match(warnings[1]!, /faultDomainBasedReplacements: accepted, not used: tend replaces pods one by one/);
    assert.match(warnings[2]!, /maxFaultDomainsWithTaintedProcessGroups: 2: tend's fault domain is a node; .*breaker\.maxTaintedNodes .*\(now 2\), taken from this field/);
    assert.match(warnings[3]!, /ignored taint key\(s\) example\.org\/maintenance/);
    assert.match(describeConfig(config), /example\.org\/maintenance ignored/);
    assert.deepEqual(configWarnings(parseConfig('taintReplacement: { podSelector: { matchLabels: { a: b } } }', 't.yaml')), []);
  });

  it('maxFaultDomainsWithTaintedProcessGroups is the breaker\'s limit unless breaker is given', () => {
    assert.deepEqual(parseConfig(block, 'fdb.yaml').taintReplacement!.breaker, { maxTaintedNodes: 2 });
    const own = parseConfig(`${block}  breaker: { maxTaintedNodes: "30%" }\n`, 'fdb.yaml').taintReplacement!;
    assert.deepEqual(own.breaker, { maxTaintedNodes: '30%' });
    assert.match(configWarnings({ taintReplacement: own })[2]!, /\(now 30%\)$/);
  });

  it('an ignored key is never acted on, and still beats the wildcard', () => {
    const c = parseConfig(block, 'fdb.yaml').taintReplacement!;
    assert.equal(c.taintReplacementOptions[1]!.durationInSeconds, IGNORED_DURATION);
    const matched = matchingTaints([{ key: 'example.org/maintenance', effect: 'NoSchedule' }, { key: 'other', effect: 'NoExecute' }], c.taintReplacementOptions);
    assert.deepEqual(matched.map((t) => `${t.key}:${t.durationInSeconds}`), ['other:3600']);
  });

  it('refuses a fraction or a negative duration, and a non-boolean faultDomainBasedReplacements', () => {
    const p = configProblems('taintReplacement: { podSelector: { matchLabels: { a: b } }, faultDomainBasedReplacements: yes please, taintReplacementOptions: [ { key: x, durationInSeconds: 1.5 } ] }');
    assert.ok(p.some((x) => /taintReplacementOptions\[0\]\.durationInSeconds: must be a whole number of seconds/.test(x)), p.join('\n'));
    assert.ok(p.some((x) => /faultDomainBasedReplacements/.test(x)), p.join('\n'));
  });
});
