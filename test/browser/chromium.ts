// Which Chromium the browser lane drives, and the one line that says what to install when it is
// missing (scripts/test.ts says it before starting a sandbox; the tests say it too).
import { existsSync } from 'node:fs';

/** Debian's `chromium` package, or TEND_TEST_CHROMIUM. */
export const CHROMIUM = process.env.TEND_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Why the lane cannot run here (one line), or undefined. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined
    : `the browser lane needs Chromium at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium), or set TEND_TEST_CHROMIUM to one`;
}
