// What tend's main thread was doing just before the armed watch got each
// ready slice event: reads a CPU profile (node --cpu-prof, as
// `bench/weeder.ts --trace DIR` writes it) and tend's debug log, and for each
// "weeder: armed deletions sent" line sums the samples in the window before
// its slice event (sliceEventUs, the profile's clock), by function.
//
//   node bench/weeder-profile.ts DIR [--before-ms 15] [--after-ms 0] [--top 12]
//
// --after-ms N: the window is the N ms after the slice event instead (what
// the thread did while the DELETE was on its way out).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: opts, positionals } = parseArgs({ allowPositionals: true, options: {
  'before-ms': { type: 'string', default: '15' }, 'after-ms': { type: 'string', default: '0' }, top: { type: 'string', default: '12' },
} });
const dir = positionals[0];
if (!dir) throw new Error('usage: node bench/weeder-profile.ts DIR');
const AFTER_US = Number(opts['after-ms']) * 1000;
const BEFORE_US = AFTER_US > 0 ? 0 : Number(opts['before-ms']) * 1000;

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: Node[]; startTime: number; samples: number[]; timeDeltas: number[] }

const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
const profiles: Profile[] = await Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, f), 'utf8'))));
// The main thread's profile is the one whose samples cover the log's events (the largest).
const profile = profiles.sort((a, b) => b.samples.length - a.samples.length)[0];
if (!profile) throw new Error(`no .cpuprofile in ${dir}`);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const times: number[] = [];
let t = profile.startTime;
for (const d of profile.timeDeltas) times.push((t += d));

const label = (id: number) => {
  const f = byId.get(id)!.callFrame;
  const file = f.url.replace(/^.*\/(node_modules\/)?/, '');
  return `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`;
};
/** The innermost frame of ours or of a library (not a node: internal), for grouping. */
const owner = (id: number) => {
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const url = byId.get(cur)!.callFrame.url;
    if (url.includes('/work/main/src/')) return `tend ${label(cur)}`;
  }
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(byId.get(cur)!.callFrame.url);
    if (m) return `lib ${m[1]}`;
  }
  return `(other) ${label(id)}`;
};

const lines = (await readFile(join(dir, 'tend.log'), 'utf8')).split('\n').filter((l) => l.includes('armed deletions sent'));
const total = new Map<string, number>();
const selfTotal = new Map<string, number>();
let windows = 0;
for (const line of lines) {
  const e = JSON.parse(line) as { sliceEventUs?: number; sinceEventMs: number[] };
  if (e.sliceEventUs === undefined) continue;
  const from = e.sliceEventUs - BEFORE_US;
  const to = e.sliceEventUs + AFTER_US;
  let busy = 0;
  const here = new Map<string, number>();
  for (let i = 0; i < times.length; i++) {
    if (times[i]! < from || times[i]! > to) continue;
    const id = profile.samples[i]!;
    const name = byId.get(id)!.callFrame.functionName;
    if (name === '(idle)' || name === '(program)' || name === '(garbage collector)') {
      if (name === '(garbage collector)') here.set('(garbage collector)', (here.get('(garbage collector)') ?? 0) + (profile.timeDeltas[i] ?? 0));
      if (name !== '(idle)') busy += profile.timeDeltas[i] ?? 0;
      continue;
    }
    const d = profile.timeDeltas[i] ?? 0;
    busy += d;
    here.set(owner(id), (here.get(owner(id)) ?? 0) + d);
    selfTotal.set(label(id), (selfTotal.get(label(id)) ?? 0) + d);
  }
  windows++;
  for (const [k, v] of here) total.set(k, (total.get(k) ?? 0) + v);
  const top = [...here].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)}`).join('; ');
  console.log(`event ${new Date(Math.round(JSON.parse(line).sliceEvent)).toISOString().slice(11, 23)}: busy ${(busy / 1000).toFixed(1)} of the ${(BEFORE_US + AFTER_US) / 1000} ms ${AFTER_US ? 'after' : 'before'}; ${top}`);
}
const show = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, Number(opts.top))
  .map(([k, v]) => `  ${(v / 1000 / Math.max(1, windows)).toFixed(2)} ms  ${k}`).join('\n');
console.log(`\nper window (${windows}), the ${(BEFORE_US + AFTER_US) / 1000} ms ${AFTER_US ? 'after' : 'before'} the slice event, by innermost tend frame (else library):\n${show(total)}`);
console.log(`\nby function (self):\n${show(selfTotal)}`);
