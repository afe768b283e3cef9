// Search attributes every tend workflow sets, so an operator can find runs in
// the Web UI by capability and target: `TendCapability="weeder"`.
// Pure: imported by workflow code too.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const TendCapability = defineSearchAttributeKey('TendCapability', SearchAttributeType.KEYWORD);
export const TendTarget = defineSearchAttributeKey('TendTarget', SearchAttributeType.KEYWORD);
