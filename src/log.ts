// The one logger. JSON lines to stderr (stdout is kept for command output);
// TEND_LOG_LEVEL sets the level.
import { pino } from 'pino';

export const log = pino(
  { level: process.env.TEND_LOG_LEVEL ?? 'info', base: { pid: process.pid } },
  pino.destination(2),
);

export type Logger = typeof log;
