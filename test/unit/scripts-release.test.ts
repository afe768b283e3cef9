// scripts/release.ts: which versions a release takes, how CHANGELOG.md's Unreleased section moves,
// and where the image's reference is written (the chart's values, the kustomization's images:).
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { chartValuesWith, chartWithVersion, compareVersions, kustomizationWith, moveUnreleased, parseVersion, versionProblem } from '../../scripts/release.ts';

describe('release: versions', () => {
  const rows: { wanted: string; current: string; problem?: RegExp }[] = [
    { wanted: '0.2.0', current: '0.1.0' },
    { wanted: '0.1.1', current: '0.1.0' },
    { wanted: '1.0.0', current: '0.9.9' },
    { wanted: '0.10.0', current: '0.9.0' },
    { wanted: '1.0.0-rc.1', current: '0.9.0' },
    { wanted: '1.0.0', current: '1.0.0-rc.1' },
    { wanted: '1.0.0-rc.2', current: '1.0.0-rc.1' },
    { wanted: '1.0.0-rc.10', current: '1.0.0-rc.9' },
    { wanted: '1.0.0-beta', current: '1.0.0-alpha.1' },
    { wanted: '1.0.0-alpha.1', current: '1.0.0-alpha' },
    { wanted: '0.1.0', current: '0.1.0', problem: /^0\.1\.0 is not above package\.json's version 0\.1\.0$/ },
    { wanted: '0.0.9', current: '0.1.0', problem: /is not above/ },
    { wanted: '1.0.0-rc.1', current: '1.0.0', problem: /is not above/ },
    { wanted: '0.1.0+build.7', current: '0.1.0', problem: /is not above/ },
    { wanted: '0.2', current: '0.1.0', problem: /^"0\.2" is not a semantic version/ },
    { wanted: 'v0.2.0', current: '0.1.0', problem: /is not a semantic version/ },
    { wanted: '01.2.0', current: '0.1.0', problem: /is not a semantic version/ },
    { wanted: '0.2.0-', current: '0.1.0', problem: /is not a semantic version/ },
    { wanted: '0.2.0; rm -rf /', current: '0.1.0', problem: /is not a semantic version/ },
    { wanted: '0.2.0', current: 'one', problem: /^package\.json's version "one" is not a semantic version/ },
  ];
  for (const r of rows) {
    it(`${r.wanted} after ${r.current}: ${r.problem ? 'refused' : 'taken'}`, () => {
      const problem = versionProblem(r.wanted, r.current);
      if (r.problem) assert.match(problem ?? '', r.problem);
      else assert.equal(problem, undefined);
    });
  }

  it('precedence is an order: 1.0.0-alpha < -alpha.1 < -beta < -rc.1 < 1.0.0', () => {
    const list = ['1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-beta', '1.0.0-rc.1', '1.0.0'].map((v) => parseVersion(v)!);
    for (let i = 0; i + 1 < list.length; i++) {
      assert.ok(compareVersions(list[i]!, list[i + 1]!) < 0, `${i}`);
      assert.ok(compareVersions(list[i + 1]!, list[i]!) > 0, `${i}`);
    }
  });
});

describe('release: CHANGELOG.md', () => {
  const log = '# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n\n- a thing\n\n## [0.1.0] - 2026-11-27\n\n- first\n';

  it("moves Unreleased's content under the version and its date, leaving Unreleased empty above it", () => {
    const moved = moveUnreleased(log, '0.2.0', '2026-12-01');
    assert.ok('text' in moved);
    assert.equal(moved.text, '# Changelog\n\nIntro.\n\n## [Unreleased]\n\n## [0.2.0] - 2026-12-01\n\n### Added\n\n- a thing\n\n## [0.1.0] - 2026-11-27\n\n- first\n');
  });

  it('the last section: Unreleased alone', () => {
    const moved = moveUnreleased('# Changelog\n\n## [Unreleased]\n- x\n', '0.1.0', '2026-01-01');
    assert.deepEqual(moved, { text: '# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-01-01\n\n- x\n' });
  });

  for (const [name, text, problem] of [
    ['no Unreleased section', '# Changelog\n\n## [0.1.0] - 2026-11-27\n', /has no "## \[Unreleased\]" section/],
    ['an empty Unreleased', '# Changelog\n\n## [Unreleased]\n\n## [0.1.0] - 2026-11-27\n', /Unreleased section is empty/],
    ['a section for the version already', '## [Unreleased]\n- x\n## [0.2.0] - 2026-11-27\n', /has a section for 0\.2\.0 already/],
  ] as const) {
    it(`refuses ${name}`, () => {
      const moved = moveUnreleased(text, '0.2.0', '2026-12-01');
      assert.ok('problem' in moved);
      assert.match(moved.problem, problem);
    });
  }
});

describe("release: the image's reference", () => {
  const image = { repository: 'registry.example/platform/tend', tag: '0.2.0', digest: `sha256:${'a'.repeat(64)}` };

  it("the chart's values: repository, tag and digest set, the comments kept", () => {
    const text = '# top\nimage:\n  repository: tend\n  # Empty: the appVersion.\n  tag: ""\n  digest: ""\n  pullPolicy: IfNotPresent\nreplicaCount: 2\n';
    const out = chartValuesWith(text, image);
    assert.deepEqual(parse(out), { image: { ...image, pullPolicy: 'IfNotPresent' }, replicaCount: 2 });
    assert.match(out, /# Empty: the appVersion\./);
    assert.equal(parse(chartValuesWith(text, { repository: 'localhost/tend', tag: '0.2.0' })).image.digest, '');
  });

  it("Chart.yaml: version and appVersion", () => {
    assert.deepEqual(parse(chartWithVersion('# c\napiVersion: v2\nname: tend\nversion: 0.1.0\nappVersion: "0.1.0"\n', '0.2.0')),
      { apiVersion: 'v2', name: 'tend', version: '0.2.0', appVersion: '0.2.0' });
  });

  it("the kustomization: an images: entry for tend added, or replaced, others kept", () => {
    const added = parse(kustomizationWith('resources:\n  - a.yaml\n', image)) as { images: unknown[]; resources: string[] };
    assert.deepEqual(added, { resources: ['a.yaml'], images: [{ name: 'tend', newName: image.repository, newTag: '0.2.0', digest: image.digest }] });
    const replaced = parse(kustomizationWith('images:\n  - name: other\n    newTag: "1"\n  - name: tend\n    newTag: "0.1.0"\n', { repository: 'localhost/tend', tag: '0.3.0' }));
    assert.deepEqual(replaced, { images: [{ name: 'other', newTag: '1' }, { name: 'tend', newName: 'localhost/tend', newTag: '0.3.0' }] });
  });
});
