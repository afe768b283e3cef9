// Histories to and from JSON in the form `temporal workflow show -o json`
// prints (proto3 JSON). The SDK's own historyToJSON/historyFromJSON
// (@temporalio/common/lib/proto-utils) fail in this install: @temporalio/common
// and @temporalio/proto each carry their own copy of protobufjs, and a Type of
// one is no Type to the other ("type must be a Type"). These use the copy
// @temporalio/proto was built with, for both the types and the conversion.
import { createRequire } from 'node:module';
import type { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
interface ProtoJson {
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
  toJson(type: unknown, message: unknown): unknown;
}

const fromProto = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'));
const protojson = fromProto('protobufjs/ext/protojson') as ProtoJson;
const proto = fromProto('@temporalio/proto') as typeof import('@temporalio/proto');
const { patchProtobufRoot } = fromProto('@temporalio/proto/lib/patch-protobuf-root') as { patchProtobufRoot: (p: unknown) => { lookupType(name: string): unknown } };
const historyType = patchProtobufRoot(proto).lookupType('temporal.api.history.v1.History');

export function historyToJSON(history: History): string {
  return JSON.stringify(protojson.toJson(historyType, proto.temporal.api.history.v1.History.fromObject(history)), null, 2);
}

export function historyFromJSON(json: unknown): History {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as { events?: unknown }).events)) {
    throw new TypeError('not a history: expected an object with an array of events');
  }
  const history = protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History | null;
  if (!history) throw new TypeError('not a history');
  return history;
}
