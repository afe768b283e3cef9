// An anchor's own file given to tend as it is: the error says which section of tend's file its
// content goes under, before the unknown fields. The example files are written from each
// anchor's documented format.
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/errors.ts';
import { parseConfig } from '../../src/config/load.ts';

const firstProblem = (text: string): string => {
  try {
    parseConfig(text, 'theirs.yaml');
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems[0]!.message;
  }
  return assert.fail('accepted');
};

describe('config: an anchor\'s own file gets a hint', () => {
  it("dependency-watchdog's weeder config file: under weeder:", () => {
    const text = 'watchDuration: 2m0s\nservicesAndDependantSelectors:\n  etcd-main-client:\n    podSelectors:\n      - matchLabels: { role: apiserver }\n';
    assert.match(firstProblem(text), /dependency-watchdog's weeder configuration .*under a `weeder:` section/);
    // And it is accepted there, as it is.
    const indented = text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');
    assert.equal(parseConfig(`weeder:\n${indented}`, 'ours.yaml').weeder?.watchDuration.text, '2m0s');
  });

  it("CKE's cluster.yaml: its repair section under repair:", () => {
    const text = 'name: prod\nnodes:\n  - address: 10.0.0.1\n    user: cke\nservice_subnet: 10.68.0.0/16\nrepair:\n  repair_procedures: []\n';
    assert.match(firstProblem(text), /CKE's cluster\.yaml: .*`repair` section goes, as it is, under tend's own `repair:` section/);
  });

  it('a FoundationDBCluster manifest: its replacements under taintReplacement:', () => {
    const text = 'apiVersion: apps.foundationdb.org/v1beta2\nkind: FoundationDBCluster\nmetadata: { name: db }\nspec:\n  automationOptions:\n    replacements: { enabled: true }\n';
    assert.match(firstProblem(text), /FoundationDBCluster manifest: .*spec\.automationOptions\.replacements goes under a `taintReplacement:` section/);
  });

  it("tend's own file with a typo gets no such hint", () => {
    assert.match(firstProblem('temporal: { adress: x }\n'), /unknown field; did you mean address/);
  });
});
