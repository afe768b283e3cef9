// The summary the Web UI shows beside an activity (docs/web-ui.md), built by the capabilities'
// pure builders (src/*/summaries.ts) from names that may come from a start's input: one line of
// printable ASCII, cut at SUMMARY_MAX characters, so that it stays under Temporal's 400-byte limit
// on a summary (a longer one is refused with the command, failing the workflow task).
export const SUMMARY_MAX = 200;

export function summaryLine(text: string): string {
  const flat = text.replace(/[^\x20-\x7e]/g, '?');
  return flat.length > SUMMARY_MAX ? `${flat.slice(0, SUMMARY_MAX - 3)}...` : flat;
}

/** The activity options that carry `text` as its summary. */
export const said = (text: string) => ({ summary: summaryLine(text) });
