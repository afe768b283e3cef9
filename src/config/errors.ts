// The one error a bad configuration raises. The CLI maps it to exit code 2;
// its message lists every problem so that one edit can fix them all. Nothing
// secret is ever in it: messages are masked (log.ts's redact) as they are made.
import { redact } from '../log.ts';

export interface ConfigProblem {
  /** Where in the document: `weeder.servicesAndDependantSelectors.etcd.podSelectors[0]`; '' for the whole document. */
  path: string;
  message: string;
  /** 1-based line in the source, when the problem can be placed. */
  line?: number;
}

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
