// The Temporal Web UI in a real browser (Debian's headless Chromium): an operator finds tend's
// runs by the TendCapability and TendTarget search attributes, reads each long-lived workflow's
// Current Details and its activities' summaries, and cancels a repair entry and a taint node
// workflow with the page's own Request Cancellation button; each ends cleanly (the Node
// uncordoned; the pod's conditions cleared, its slot given back), as Kubernetes and tend's
// queries show. With TEND_SCREENSHOTS set, the pages are saved into docs/images
// (`npm run screenshots`; docs/web-ui.md shows them).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { testStateDir } from '../harness/env.ts';
import { entry, nodeUnschedulable, temporalCli } from '../harness/repair.ts';
import { readPod, taintStatusJson } from '../harness/taint.ts';
import { waitFor } from '../harness/wait.ts';
import { listUrl, newPage, openBrowser, picture, workflowUrl } from './browser.ts';
import { BrowserWorld, REPAIR_ADDRESS, REPAIR_NODE, TAINT_KEY, TAINTED_NODE } from './world.ts';

/** What the Web UI shows instead of a page whose data it could not load (its API answered 500 under load). */
const ERROR_PAGE = "Uh oh. There's an error.";
const errorShown = (page: Page) => page.getByText(ERROR_PAGE).isVisible();

/**
 * Opens `url` until `ready` shows, within 90 s: on a loaded machine the Web UI's server at times
 * answers a page's data with 500, and the page shows its error page instead (an operator would
 * refresh too). What the test then checks is read from the page that opened.
 */
async function visit(page: Page, url: string, ready: Locator): Promise<void> {
  await waitFor(`${url} to open`, async () => {
    await page.goto(url);
    await ready.first().waitFor({ timeout: 15_000 });
    return true;
  }, { timeoutMs: 90_000 });
}

/** The workflow ids the list shows now (the rows' links name them), once they stop changing, sorted. */
async function listed(page: Page, query: string, expected: string[]): Promise<string[]> {
  await page.goto(listUrl(query));
  let shown: string[] = [];
  // The list loads after the page: read until it shows what is expected, or the bound passes.
  await waitFor(`the list for ${query}`, async () => {
    if (await errorShown(page)) await page.goto(listUrl(query));
    const hrefs = await page.locator('tbody a[href*="/workflows/"]').evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
    shown = [...new Set(hrefs.map((h) => decodeURIComponent(h.split('/workflows/')[1]!.split('/')[0]!)))].sort();
    return shown.join() === [...expected].sort().join();
  }, { timeoutMs: 30_000 }).catch(() => undefined);
  return shown;
}

/** A workflow's page, on its User Metadata tab: its summary, Current Details and the events with a summary. */
async function metadataOf(page: Page, workflowId: string): Promise<void> {
  await visit(page, workflowUrl(workflowId), page.getByTestId('user-metadata-tab'));
  await page.getByTestId('user-metadata-tab').click();
  await page.getByText('Current Details').first().waitFor();
}

/** The text the page shows, its frames' too (the Web UI renders a workflow's summary and details in frames of their own). */
async function pageText(page: Page): Promise<string> {
  const texts = await Promise.all(page.frames().map((f) => f.locator('body').innerText({ timeout: 5_000 }).catch(() => '')));
  return texts.join('\n');
}

/** Waits until the page shows `text` (a summary, a line of details), within 30 s. */
async function shows(page: Page, text: string | RegExp): Promise<void> {
  await waitFor(`the page to show ${text}`, async () => {
    const all = await pageText(page);
    return typeof text === 'string' ? all.includes(text) : text.test(all);
  }, { timeoutMs: 30_000 });
}

/** How the workflow's latest run ended, as `temporal workflow describe` says (CANCELED, ...). */
async function statusOf(workflowId: string): Promise<string> {
  const { stdout } = await temporalCli(['workflow', 'describe', '--workflow-id', workflowId, '-o', 'json']);
  return String((JSON.parse(stdout) as { workflowExecutionInfo: { status: string } }).workflowExecutionInfo.status);
}

/** Who asked for the run's cancellation, from its history (the Web UI's own request: its identity). */
async function cancelRequestedBy(workflowId: string): Promise<string | undefined> {
  const { stdout } = await temporalCli(['workflow', 'show', '--workflow-id', workflowId, '-o', 'json']);
  const events = (JSON.parse(stdout) as { events: { eventType: string; workflowExecutionCancelRequestedEventAttributes?: { identity?: string } }[] }).events;
  const asked = events.find((e) => /CANCEL_REQUESTED|CancelRequested/.test(e.eventType));
  return asked ? (asked.workflowExecutionCancelRequestedEventAttributes?.identity ?? '') : undefined;
}

/** Clicks the page's Request Cancellation, then the confirmation's Confirm. */
async function requestCancellation(page: Page, workflowId: string, shot?: string): Promise<void> {
  await visit(page, workflowUrl(workflowId), page.getByRole('button', { name: 'Request Cancellation' }));
  await page.getByRole('button', { name: 'Request Cancellation' }).click();
  // The page keeps a closed copy of the dialog too: the one open is the one with that name.
  const modal = page.getByRole('dialog', { name: 'Cancel Workflow' });
  await modal.getByRole('button', { name: 'Confirm' }).waitFor();
  if (shot) await picture(page, shot);
  await modal.getByRole('button', { name: 'Confirm' }).click();
  await modal.waitFor({ state: 'hidden' });
}

describe('the Temporal Web UI in headless Chromium (browser lane)', function () {
  this.timeout(300_000);
  const w = new BrowserWorld();
  let browser: Browser;
  let page: Page;

  before(async function () {
    this.timeout(600_000);
    browser = await openBrowser();
    page = await newPage(browser);
    await w.setUp();
  });
  // A failed test's page, as the browser had it, beside the sandbox's logs.
  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !page) return;
    const file = join(testStateDir, 'logs', `browser-${this.currentTest.title.slice(0, 40).replace(/\W+/g, '-')}.png`);
    await page.screenshot({ path: file }).then(() => process.stderr.write(`      the page when it failed: ${file}\n`), () => undefined);
  });
  after(async function () {
    this.timeout(180_000);
    await browser?.close();
    await w.tearDown();
  });

  const entryId = () => `repair/${w.entry!.index}`;
  const podName = () => `${w.taintNs}/${w.taintPod!.metadata!.name}`;

  it('the list filtered by TendCapability, or by TendTarget, shows that capability\'s or that target\'s runs and no others', async () => {
    const running = (q: string) => `${q} AND ExecutionStatus="Running"`;
    const byCapability: Record<string, string[]> = {
      taint: [`taint/${TAINTED_NODE}`, 'taint-replacements'],
      repair: ['repair-queue', entryId()],
      weeder: [`weeder/${w.weederNs}/db`],
      apps: [`app/${w.appsNs}/web`],
      safety: ['tend-safety'],
    };
    for (const [capability, expected] of Object.entries(byCapability)) {
      const shown = await listed(page, running(`TendCapability="${capability}"`), expected);
      assert.deepEqual(shown, [...expected].sort(), `TendCapability="${capability}": the list shows ${shown.join(', ') || 'nothing'}`);
      if (capability === 'taint') await picture(page, 'web-ui-list-capability', { clip: { x: 0, y: 0, width: 1280, height: 400 } });
    }
    for (const [target, expected] of [[TAINTED_NODE, [`taint/${TAINTED_NODE}`]], [REPAIR_ADDRESS, [entryId()]], [`${w.weederNs}/db`, [`weeder/${w.weederNs}/db`]]] as const) {
      const shown = await listed(page, running(`TendTarget="${target}"`), [...expected]);
      assert.deepEqual(shown, [...expected], `TendTarget="${target}": the list shows ${shown.join(', ') || 'nothing'}`);
      if (target === TAINTED_NODE) await picture(page, 'web-ui-list-target', { clip: { x: 0, y: 0, width: 1280, height: 400 } });
    }
  });

  it('each long-lived workflow\'s page shows readable Current Details and its activities\' summaries', async () => {
    const ns = w.weederNs;
    const pages: { id: string; details: RegExp[]; summaries: (string | RegExp)[]; shot?: string }[] = [
      {
        id: `taint/${TAINTED_NODE}`, shot: 'web-ui-taint-node',
        details: [new RegExp(`Node ${TAINTED_NODE} carries ${TAINT_KEY}:NoSchedule\\.`), new RegExp(`Blocked \\(1\\): ${podName()}\\.`)],
        summaries: [`read node ${TAINTED_NODE}, list its managed pods and mark them`, `mark NodeTaintReplacing on pod ${podName()} (node ${TAINTED_NODE})`,
          `evict pod ${podName()} from node ${TAINTED_NODE}`],
      },
      {
        id: 'taint-replacements',
        details: [/Replacements in flight: 1 of 1; waiting for a slot: 0\./, new RegExp(`In flight: ${podName()} on ${TAINTED_NODE}\\.`)],
        summaries: ['read maxConcurrentReplacements and the breaker\'s limit', 'count the tainted nodes for the breaker'],
      },
      {
        id: entryId(), shot: 'web-ui-repair-entry',
        details: [new RegExp(`Repair entry ${w.entry!.index}: drain on sim ${REPAIR_ADDRESS.replaceAll('.', '\\.')}, node ${REPAIR_NODE}; step 0 of 1, draining`)],
        summaries: [`find the Node of ${REPAIR_ADDRESS} and check its health (repair entry ${w.entry!.index}, drain)`,
          `cordon node ${REPAIR_NODE} and drain it (repair entry ${w.entry!.index}, drain)`],
      },
      {
        id: 'repair-queue',
        details: [/Repair queue enabled \(max_concurrent_repairs 3\); 1 entry\./, new RegExp(`Processing \\(1\\): ${w.entry!.index} drain on ${REPAIR_ADDRESS.replaceAll('.', '\\.')} \\(step 0 draining\\)\\.`)],
        summaries: ['check 1 repair request against the repair procedures', 'read max_concurrent_repairs and the procedures of 1 queued entry'],
      },
      {
        id: `weeder/${ns}/db`, shot: 'web-ui-weeder-window',
        details: [/Window open until \d{4}-\d\d-\d\dT/, new RegExp(`Weeded: (${w.weeded.map((p) => p.metadata!.name).join('|')})`)],
        summaries: [`read the weeder settings of Service ${ns}/db`, `follow Service ${ns}/db until it is ready again, then delete its crash-looping dependants`,
          `watch the dependants of Service ${ns}/db for CrashLoopBackOff while the window is open`],
      },
      {
        id: `app/${w.appsNs}/web`,
        details: [new RegExp(`App ${w.appsNs}/web: desired STARTED, actual STARTED, settled`), /Workloads: web-web-/],
        summaries: [`reconcile App ${w.appsNs}/web: its workloads and status`],
      },
      {
        id: 'tend-safety',
        details: [/Paused \(revision 1\): no destructive action of weeder\./, /weeder paused since .*: browser lane: the weeder window is looked at, not acted on/],
        summaries: [],
      },
    ];
    for (const p of pages) {
      await metadataOf(page, p.id);
      for (const d of p.details) await shows(page, d).catch(() => assert.fail(`${p.id}: the Current Details do not show ${d}`));
      for (const s of p.summaries) await shows(page, s).catch(() => assert.fail(`${p.id}: no activity with the summary ${s}`));
      if (p.shot) await picture(page, p.shot);
    }
    // The history's timeline names each activity by its summary too.
    await visit(page, workflowUrl(entryId()), page.getByTestId('user-metadata-tab'));
    await shows(page, `repairDrain • cordon node ${REPAIR_NODE} and drain it (repair entry ${w.entry!.index}, drain)`);
    await picture(page, 'web-ui-repair-timeline');
  });

  it('Request Cancellation on a repair entry\'s page: the run ends Canceled, the Node\'s cordon is lifted, the entry leaves the queue', async () => {
    const index = w.entry!.index;
    assert.equal(await nodeUnschedulable(REPAIR_NODE), true, 'cordoned by the drain before the cancellation');
    await requestCancellation(page, entryId(), 'web-ui-cancel');
    await waitFor('the cordon lifted and the entry gone from the queue', async () =>
      !(await nodeUnschedulable(REPAIR_NODE)) && (await entry(w.repair, index)) === undefined, { timeoutMs: 60_000 });
    assert.equal(await statusOf(entryId()), 'WORKFLOW_EXECUTION_STATUS_CANCELED');
    assert.notEqual(await cancelRequestedBy(entryId()), undefined, 'the history records the cancellation request');
    const node = await w.kube.core.readNode({ name: REPAIR_NODE });
    assert.equal(node.metadata?.annotations?.['tend.dev/repair-cordoned'], undefined, 'no cordon mark left behind');
    // The page says so: Canceled, and the cleanup's own activity.
    await metadataOf(page, entryId());
    await shows(page, 'Canceled');
    await shows(page, `Repair entry ${index} cancelled (deleted, or cancelled in the Web UI) at step 0, draining: node ${REPAIR_NODE} is not cordoned by tend; ` +
      'the entry has left the queue.');
    const lift = `lift the cordon on node ${REPAIR_NODE} (repair entry ${index}, drain)`;
    await shows(page, lift);
    await picture(page, 'web-ui-repair-cancelled', { until: lift });
  });

  it('Request Cancellation on a taint node\'s page: the run ends Canceled, its pod\'s conditions are cleared and its slot given back', async () => {
    // Stopped first, so that its resync starts no new run for the node, still tainted, while this looks (docs/web-ui.md).
    await w.watcher!.stop();
    const uid = w.taintPod!.metadata!.uid!;
    const before = await taintStatusJson(w.config);
    assert.ok(before.slots?.inFlight.some((g) => g.uid === uid), `the pod holds a slot: ${JSON.stringify(before.slots?.inFlight)}`);
    assert.equal(await w.taintMarked(), true);
    await requestCancellation(page, `taint/${TAINTED_NODE}`);
    const after = await waitFor('the conditions cleared and the slot given back', async () => {
      const s = await taintStatusJson(w.config);
      return !(await w.taintMarked()) && s.slots?.inFlight.length === 0 && !s.nodes.includes(TAINTED_NODE) && s;
    }, { timeoutMs: 60_000 });
    assert.deepEqual(after.slots?.queue, [], 'nothing waits for a slot');
    assert.equal(await statusOf(`taint/${TAINTED_NODE}`), 'WORKFLOW_EXECUTION_STATUS_CANCELED');
    const pod = await readPod(w.kube, w.taintNs, w.taintPod!.metadata!.name!);
    assert.equal(pod?.metadata?.uid, uid, 'the pod is not replaced');
    assert.ok(!pod?.metadata?.deletionTimestamp, 'the pod is not being deleted');
    await metadataOf(page, `taint/${TAINTED_NODE}`);
    await shows(page, `Cancelled: the taint conditions this workflow set on the pods of node ${TAINTED_NODE} are cleared, and its replacement slots given back.`);
    const clear = `clear the taint conditions of pod ${podName()} (node ${TAINTED_NODE})`;
    await shows(page, clear);
    await picture(page, 'web-ui-taint-cancelled', { until: clear });
  });
});
