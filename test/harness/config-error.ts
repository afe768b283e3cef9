// The ConfigError a call throws, for unit tests of configuration problems.
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/errors.ts';

export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  return assert.fail('expected a ConfigError');
}
