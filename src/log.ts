// The one logger. JSON lines to stderr (stdout is kept for command output);
// TEND_LOG_LEVEL sets the level.
//
// Nothing secret is ever written: every line the logger writes, and every error message the CLI
// prints (redact()), has credentials masked wherever they appear, messages and stacks included:
// the values registered as secrets (the Temporal API key, whatever the environment holds under a
// name like *_API_KEY, *TOKEN*, *SECRET*, *PASSWORD*), PEM blocks (keys and certificates), bearer
// and basic credentials, JSON Web Tokens (Kubernetes ServiceAccount tokens) and the values of
// fields named like apiKey, token, password, secret or client-key-data.
import { pino } from 'pino';

const MASK = '[redacted]';
// Shorter values would mask ordinary words; no real key or token is this short.
const MIN_SECRET_LENGTH = 6;
const known = new Set<string>();
let knownPattern: RegExp | undefined;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Masks `value` wherever it appears in what tend writes from now on. */
export function registerSecret(value: string | undefined): void {
  if (typeof value !== 'string' || value.trim().length < MIN_SECRET_LENGTH || known.has(value)) return;
  known.add(value);
  // The value as it is, and as it reads inside a JSON string (quotes and backslashes escaped).
  const forms = new Set<string>();
  for (const v of known) {
    forms.add(v);
    forms.add(JSON.stringify(v).slice(1, -1));
  }
  // Longest first, so that a value containing another is masked whole.
  knownPattern = new RegExp([...forms].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'g');
}

/** Names of environment variables whose values are credentials. */
export const secretEnvName = /(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)/i;

for (const [name, value] of Object.entries(process.env)) {
  if (secretEnvName.test(name)) registerSecret(value);
}

const patterns: [RegExp, string][] = [
  // PEM blocks, whole (keys, certificates, CSRs), also inside JSON strings, and a cut-off one.
  [/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?(-----END \1-----|$)/g, `-----BEGIN $1----- ${MASK} -----END $1-----`],
  // HTTP credentials: Authorization: Bearer <token>, Basic <base64>.
  [/\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{6,}/gi, `$1$2${MASK}`],
  // JSON Web Tokens (Kubernetes ServiceAccount tokens among them): header.payload.signature.
  [/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, MASK],
  // The value of a field or variable named like a credential: `apiKey: x`, `"token":"x"`,
  // `TEMPORAL_API_KEY=x`, `client-key-data: x`. Not `apiKeyEnv: NAME` (that names a variable), nor
  // a setting's dotted path, as tend's errors name one (`temporal.apiKey: must not be empty`).
  [/((?<!\.)(?:api[-_]?key|token|password|passwd|secret|client-key-data|authorization)\\?["']?\s*[:=]\s*\\?["']?)(?!\[redacted\]|Bearer\b|Basic\b)[^\s"'\\,{}[\]]{4,}/gi, `$1${MASK}`],
];

/** `text` with every credential masked. */
export function redact(text: string): string {
  let out = knownPattern ? text.replace(knownPattern, MASK) : text;
  for (const [pattern, replacement] of patterns) out = out.replace(pattern, replacement);
  return out;
}

/**
 * TEND_LOG_LEVEL, or info. A level pino does not know is an operator's mistake made before any
 * command runs: said in one line, exit 2 (pino would throw, and its stack would be all one saw).
 */
function logLevel(): string {
  const level = process.env.TEND_LOG_LEVEL;
  if (level === undefined || level === '') return 'info';
  const known = [...Object.keys(pino.levels.values), 'silent'];
  if (known.includes(level)) return level;
  process.stderr.write(`tend: TEND_LOG_LEVEL: "${level}" is not a log level (one of: ${known.join(', ')})\n`);
  process.exit(2);
}

export const log = pino(
  {
    level: logLevel(),
    base: { pid: process.pid },
    // Fields that hold credentials by name are masked before serialization...
    redact: {
      paths: [
        'apiKey', '*.apiKey', '*.*.apiKey', 'token', '*.token', 'password', '*.password',
        'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization', '*.headers.Authorization',
        'config.temporal.apiKey', 'config.kubernetes.token',
      ],
      censor: MASK,
    },
    // ...and every line is masked as written, so a credential inside a message or a stack is too.
    hooks: { streamWrite: redact },
  },
  pino.destination(2),
);

export type Logger = typeof log;
