// The one logger. One record a line on stderr (stdout is kept for command output), in one of two
// formats (docs/logging.md): JSON, string levels and ISO-8601 UTC times, what a Deployment's log
// collector reads; or text, `time LEVEL message key=value ...`, for a person at a terminal.
// TEND_LOG_LEVEL sets the level; TEND_LOG_FORMAT or --log-format the format, else text when stderr
// is a terminal and JSON otherwise.
//
// Nothing secret is ever written: every line the logger writes, and every error message the CLI
// prints (redact()), has credentials masked wherever they appear, messages and stacks included:
// the values registered as secrets (the Temporal API key, whatever the environment holds under a
// name like *_API_KEY, *TOKEN*, *SECRET*, *PASSWORD*), PEM blocks (keys and certificates), bearer
// and basic credentials, JSON Web Tokens (Kubernetes ServiceAccount tokens) and the values of
// fields named like apiKey, token, password, secret or client-key-data. A text line is made from
// the masked JSON line, and masked again as text.
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
  // PEM blocks, whole (keys, certificates, CSRs), also inside JSON strings, and a cut-off one: up
  // to the end of the text, or of the JSON string it is in (base64 has no quote), so that the
  // line stays JSON.
  [/-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?(-----END \1-----|(?=\\*["']|$))/g, `-----BEGIN $1----- ${MASK} -----END $1-----`],
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

export type LogFormat = 'json' | 'text';
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/** `value` as a log format, or a one-line problem naming `where` (the option or the variable it came from). */
export function parseLogFormat(value: string, where: string): LogFormat | { problem: string } {
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  return { problem: `${where}: ${JSON.stringify(value.slice(0, 40))} is not a log format (one of: ${LOG_FORMATS.join(', ')})` };
}

/**
 * TEND_LOG_FORMAT, else text on a terminal (an operator running tend at a shell) and JSON
 * otherwise (a container's stderr is a pipe its runtime collects). A bad value: one line, exit 2,
 * as for TEND_LOG_LEVEL.
 */
function initialFormat(): LogFormat {
  const value = process.env.TEND_LOG_FORMAT;
  if (value === undefined || value === '') return process.stderr.isTTY ? 'text' : 'json';
  const format = parseLogFormat(value, 'TEND_LOG_FORMAT');
  if (typeof format === 'string') return format;
  process.stderr.write(`tend: ${format.problem}\n`);
  process.exit(2);
}

let format: LogFormat = initialFormat();

/** From now on, lines are written in `f` (--log-format, once the command line is read). */
export function setLogFormat(f: LogFormat): void {
  format = f;
}

export function logFormat(): LogFormat {
  return format;
}

/** The fields a text line shows in front (time, level, message) or leaves out (pid: one process a terminal). */
const ENVELOPE = new Set(['time', 'level', 'msg', 'pid', 'hostname']);
// A key or a value written bare when it holds nothing that would make the line ambiguous: no
// space, quote, `=`, backslash or control character (nor a non-ASCII space); else JSON-quoted.
const BARE = /^[^\s"'=\\\p{Cc}]+$/u;
const LEVEL_WIDTH = 5;

const quoted = (s: string) => (BARE.test(s) ? s : JSON.stringify(s));

function fieldsOf(value: unknown, key: string, out: string[]): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const entries = Object.entries(value);
    if (entries.length === 0) out.push(`${quoted(key)}={}`);
    // Nested objects as dotted keys: err.type=Error err.message="..." err.stack="...".
    for (const [k, v] of entries) fieldsOf(v, `${key}.${k}`, out);
    return;
  }
  const text = typeof value === 'string' ? quoted(value) : JSON.stringify(value) ?? String(value);
  out.push(`${quoted(key)}=${text}`);
}

/**
 * A JSON record (as the JSON format writes it) as one text line, no newline:
 * `2026-11-27T17:40:06.123Z INFO  message key=value ...`. Control characters in the message (a
 * newline) are escaped, so that a record is always one line.
 */
export function textLine(record: Record<string, unknown>): string {
  const level = String(record.level ?? '').toUpperCase().padEnd(LEVEL_WIDTH);
  const msg = String(record.msg ?? '').replace(/\p{Cc}/gu, (c) => JSON.stringify(c).slice(1, -1));
  const fields: string[] = [];
  for (const [k, v] of Object.entries(record)) if (!ENVELOPE.has(k)) fieldsOf(v, k, fields);
  return [String(record.time ?? ''), level, msg, ...fields].filter((part) => part !== '').join(' ');
}

/** What is written for one serialized record: masked, and as text when that is the format. */
function written(line: string): string {
  const masked = redact(line.endsWith('\n') ? line.slice(0, -1) : line);
  if (format === 'json') return `${masked}\n`;
  let record: unknown;
  try {
    record = JSON.parse(masked);
  } catch {
    // Not JSON once masked (nothing tend writes, but never a line lost): written as masked.
    return `${masked}\n`;
  }
  if (record === null || typeof record !== 'object') return `${masked}\n`;
  return `${redact(textLine(record as Record<string, unknown>))}\n`;
}

// A record's own time (atTime), for the SDK's lines, which it hands on later than they were written.
let recordTime: number | undefined;

/** Runs `write` (one logging call) with its record stamped at `epochMs` rather than now. */
export function atTime(epochMs: number, write: () => void): void {
  recordTime = Number.isFinite(epochMs) ? epochMs : undefined;
  try {
    write();
  } finally {
    recordTime = undefined;
  }
}

export const log = pino(
  {
    level: logLevel(),
    base: { pid: process.pid },
    // "info", not 30; an ISO-8601 UTC time, not epoch milliseconds: readable as they are, and what
    // log collectors parse.
    formatters: { level: (label) => ({ level: label }) },
    timestamp: () => `,"time":"${new Date(recordTime ?? Date.now()).toISOString()}"`,
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
    hooks: { streamWrite: written },
  },
  // Written before the call returns: the CLI ends with process.exit, which would lose a line
  // still being written, or write it after the ones behind it.
  pino.destination({ dest: 2, sync: true }),
);

export type Logger = typeof log;
