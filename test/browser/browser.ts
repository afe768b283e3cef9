// The browser lane's harness: Debian's headless Chromium driven by playwright-core (no browser of
// its own: it is pointed at the system's), the sandbox's Temporal Web UI, and the screenshots the
// docs use (docs/web-ui.md), saved only when TEND_SCREENSHOTS is set (`npm run screenshots`).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { repoRoot } from '../harness/env.ts';
import { sandbox } from '../harness/hooks.ts';
import { CHROMIUM, chromiumMissing } from './chromium.ts';

/** The size of every page, and so of the screenshots. */
export const VIEWPORT = { width: 1280, height: 800 };

export async function openBrowser(): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

export async function newPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: VIEWPORT });
  // Every wait below is bounded: a locator that never shows fails the test after this long.
  page.setDefaultTimeout(30_000);
  return page;
}

/** A Web UI address of the sandbox's default namespace: `workflows`, `workflows/<id>`... */
export const uiUrl = (path: string) => `${sandbox().webUi}/namespaces/default/${path}`;

/** The workflow list filtered by a visibility query, as the list's own filter writes it in the address. */
export const listUrl = (query: string) => uiUrl(`workflows?query=${encodeURIComponent(query)}`);

/** A workflow's page (its latest run). */
export const workflowUrl = (workflowId: string) => uiUrl(`workflows/${encodeURIComponent(workflowId)}`);

/** Where `npm run screenshots` puts the pictures: docs/images. */
const IMAGES = join(repoRoot, 'docs', 'images');

/** At most this tall, a picture that goes down to a line (`until`). */
const TALL_MAX_HEIGHT = 1600;

/**
 * Saves the page as docs/images/<name>.png when TEND_SCREENSHOTS is set: the viewport, `clip` of
 * it, or (`until`) from the top down to the line that shows that text, in a viewport made tall
 * enough, so that a list below the fold is in the picture too.
 */
export async function picture(page: Page, name: string, o: { clip?: { x: number; y: number; width: number; height: number }; until?: string } = {}): Promise<void> {
  if (!process.env.TEND_SCREENSHOTS) return;
  mkdirSync(IMAGES, { recursive: true });
  const path = join(IMAGES, `${name}.png`);
  if (o.until === undefined) return void await page.screenshot({ path, ...(o.clip ? { clip: o.clip } : {}) });
  await page.setViewportSize({ width: VIEWPORT.width, height: TALL_MAX_HEIGHT });
  try {
    const box = await page.getByText(o.until).first().boundingBox();
    const height = Math.min(TALL_MAX_HEIGHT, Math.max(VIEWPORT.height, Math.ceil((box?.y ?? 0) + (box?.height ?? 0) + 24)));
    await page.screenshot({ path, clip: { x: 0, y: 0, width: VIEWPORT.width, height } });
  } finally {
    await page.setViewportSize(VIEWPORT);
  }
}
