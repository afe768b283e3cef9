// The ConfigError a call throws, for unit tests of configuration problems.
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/errors.ts';
import { parseConfig } from '../../src/config/load.ts';

export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  return assert.fail('expected a ConfigError');
}

/** The problems a configuration text is refused for, each as `path: message`. */
export function configProblems(text: string): string[] {
  return configError(() => parseConfig(text, 'test.yaml')).problems.map((p) => `${p.path}: ${p.message}`);
}
