// Search attributes every tend workflow sets, so an operator can find runs in
// the Web UI by capability and target: `TendCapability="weeder"`.
// Pure: imported by workflow code too.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TendCapability = defineSearchAttributeKey('TendCapability', SearchAttributeType.KEYWORD);
export const TendTarget = defineSearchAttributeKey('TendTarget', SearchAttributeType.KEYWORD);
// The Node a run concerns (taint/<node>, node/<node>, repair/<index>), so that
// `TendNode = "worker-3"` finds one Node's whole incident: docs/web-ui.md.
export const TendNode = defineSearchAttributeKey('TendNode', SearchAttributeType.KEYWORD);
