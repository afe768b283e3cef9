// The errors tend's layers share, on the ground floor so that none of them imports another
// for an error class: the configuration (ConfigError), a command's usage (UsageError), a
// failure said in full (OperatorError), and an unreachable Temporal or API server. The CLI
// maps each to its exit code (src/starters/cli.ts): 2 for the first two, 1 for the rest.
// Nothing heavy is imported here: a command reports these without loading a client library.
import { redact } from './log.ts';

export interface ConfigProblem {
  /** Where in the document: `weeder.servicesAndDependantSelectors.etcd.podSelectors[0]`; '' for the whole document. */
  path: string;
  message: string;
  /** 1-based line in the source, when the problem can be placed. */
  line?: number;
}

/**
 * The one error a bad configuration raises (exit 2). Its message lists every problem so that one
 * edit can fix them all. Nothing secret is ever in it: messages are masked (log.ts's redact) as
 * they are made.
 */
export class ConfigError extends Error {
  /** The file path or ConfigMap reference the config came from. */
  readonly origin: string;
  readonly problems: readonly ConfigProblem[];

  constructor(origin: string, problems: readonly ConfigProblem[]) {
    const masked = problems.map((p) => ({ ...p, message: redact(p.message) }));
    super(formatProblems(origin, masked));
    this.name = 'ConfigError';
    this.origin = origin;
    this.problems = masked;
  }
}

function formatProblems(origin: string, problems: readonly ConfigProblem[]): string {
  const [only] = problems;
  if (problems.length === 1 && only!.path === '') return `config ${origin}: ${only!.message}`;
  const lines = problems.map(({ path, message, line }) => {
    const where = line === undefined || path === '' ? '' : ` (line ${line})`;
    return `  - ${path === '' ? '' : `${path}: `}${message}${where}`;
  });
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  return `config ${origin}: ${count}:\n${lines.join('\n')}`;
}

/** An error whose message is all the operator needs: printed without a stack (exit 2). */
export class UsageError extends Error {}

/** A failure whose message says all the operator needs (what failed, what to do): exit 1, no stack. */
export class OperatorError extends Error {}

/** Temporal could not be reached (or refused the connection): exit 1 naming the address and what to check. */
export class UnreachableError extends Error {}

/** The API server could not be reached (refused, no route, name not found, TLS): exit 1 with the address and the reason. */
export class KubeUnreachableError extends Error {}
