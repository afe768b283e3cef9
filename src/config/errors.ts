// The configuration's error lives on the ground floor (src/errors.ts), where the kube client and
// the worker import it too; re-exported here for the modules that read it as config's.
export { ConfigError, type ConfigProblem } from '../errors.ts';
