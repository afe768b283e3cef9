// src/workers/versioning.ts, and the temporal.deployment section it reads (src/config/schema.ts).
import assert from 'node:assert/strict';
import { buildIdOf, promotionStep, type DeploymentView } from '../../src/workers/versioning.ts';
import { ConfigError } from '../../src/config/errors.ts';
import { describeConfig, parseConfig } from '../../src/config/load.ts';
import { stringify } from 'yaml';

const view = (more: Partial<DeploymentView> = {}): DeploymentView => ({
  versions: [{ buildId: 'old', createdMs: 1000 }, { buildId: 'new', createdMs: 2000 }],
  ...more,
});

describe('worker versioning: when a worker makes its version current', () => {
  it('waits until the server has registered its version', () => {
    assert.equal(promotionStep(undefined, 'new').do, 'wait');
    assert.equal(promotionStep({ versions: [{ buildId: 'old', createdMs: 1 }] }, 'new').do, 'wait');
  });
  it('promotes into a deployment with no current version (a fresh install)', () => {
    assert.deepEqual(promotionStep(view(), 'old'), { do: 'promote' });
  });
  it('promotes a version newer than the current one (a roll-out)', () => {
    assert.deepEqual(promotionStep(view({ current: 'old' }), 'new'), { do: 'promote', from: 'old' });
  });
  it('leaves a newer current version alone (an old replica restarting mid roll-out)', () => {
    const step = promotionStep(view({ current: 'new' }), 'old');
    assert.equal(step.do, 'leave');
    assert.match('why' in step ? step.why : '', /version new, newer than this one, is current/);
  });
  it('is done when its version is current', () => {
    assert.equal(promotionStep(view({ current: 'new' }), 'new').do, 'done');
  });
  it('leaves a ramping roll-out or a managed deployment to whoever runs it', () => {
    assert.equal(promotionStep(view({ current: 'old', ramping: 'other' }), 'new').do, 'leave');
    const managed = promotionStep(view({ current: 'old', manager: 'controller' }), 'new');
    assert.equal(managed.do, 'leave');
    assert.match('why' in managed ? managed.why : '', /managed by "controller"/);
  });
  it('promotes over a current version the server no longer lists', () => {
    assert.deepEqual(promotionStep(view({ current: 'gone' }), 'new'), { do: 'promote', from: 'gone' });
  });
  it('derives a build id from the code fingerprint', () => {
    assert.equal(buildIdOf('0123456789abcdef0123'), 'tend-0123456789ab');
  });
});

describe('worker versioning: temporal.deployment in the config', () => {
  const problems = (deployment: unknown) => {
    try {
      parseConfig(stringify({ temporal: { deployment } }), 'tend.yaml');
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    }
    return '';
  };
  it('defaults the name to tend and promotion to newest; the build id stays derived', () => {
    const c = parseConfig(stringify({ temporal: { deployment: {} } }), 'tend.yaml');
    assert.deepEqual(c.temporal.deployment, { name: 'tend', promote: 'newest' });
  });
  it('is described by tend config validate', () => {
    const c = parseConfig(stringify({ temporal: { deployment: { buildId: 'b7', promote: 'never' } } }), 'tend.yaml');
    assert.match(describeConfig(c), /^worker versioning: deployment tend, build id b7, made current by the operator$/m);
    assert.doesNotMatch(describeConfig(parseConfig('{}', 'tend.yaml')), /versioning/);
  });
  it('is absent (unversioned) unless written', () => {
    assert.equal(parseConfig('{}', 'tend.yaml').temporal.deployment, undefined);
  });
  it('refuses a bad promote, a name with a dot, an empty build id and unknown fields, naming the path', () => {
    assert.match(problems({ promote: 'always' }), /temporal\.deployment\.promote.*newest.*never/s);
    assert.match(problems({ name: 'a.b' }), /temporal\.deployment\.name.*must not contain "\."/s);
    assert.match(problems({ buildId: '' }), /temporal\.deployment\.buildId/);
    assert.match(problems({ buildID: 'x' }), /temporal\.deployment.*buildID/s);
  });
});
