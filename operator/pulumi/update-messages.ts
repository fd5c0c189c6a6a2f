// Why an update ran, recorded in the update itself: the message of each `up`, `refresh` and
// `destroy` (Pulumi keeps it in the stack's history). The DIY backend's update environment cannot
// carry it: the CLI fills it on its own (PULUMI_* variables by name and set-ness only, CI, git),
// with no way to add a key. So the message says it twice, for a person who runs
// `pulumi stack history` and for `appstack history`, which parses the tagged JSON at its end:
//   generation 3: drift repaired (Deployment web: spec.replicas) [appstack {"generation":3,"why":"drift",...}]

import { updateWhys, type StackOperation, type UpdateRecord, type UpdateWhy } from "../../crds/types.ts";

export type { UpdateRecord, UpdateWhy };


const tag = " [appstack ";

/** A difference as the drift check words it (`Deployment web: spec.replicas: 5, want 2`), without values. */
export function driftField(line: string): string {
  const [child, path] = line.split(": ");
  return path === undefined ? line : `${child}: ${path}`;
}

/** What a person reads of the record: the why, in words. */
export function describeWhy(record: Pick<UpdateRecord, "why" | "detail" | "fields" | "plan" | "attempt">): string {
  const base = (() => {
    switch (record.why) {
      case "created":
        return "created";
      case "spec":
        return record.detail ?? "spec changed";
      case "drift":
        return `drift repaired (${(record.fields ?? []).join("; ") || "children differed"})`;
      case "approved":
        return `plan ${record.plan ?? "?"} approved${record.detail ? ` (${record.detail})` : ""}`;
      case "program":
        return "the operator's program changed";
      case "interrupted":
        return "an interrupted operation finished";
      case "deleted":
        return "object deleted";
      case "requested":
        return record.detail ?? "reconcile requested";
    }
  })();
  return record.attempt && record.attempt > 1 ? `retry ${record.attempt}: ${base}` : base;
}

export function updateMessage(record: UpdateRecord): string {
  return `generation ${record.generation}: ${describeWhy(record)}${tag}${JSON.stringify(record)}]`;
}

/** The record in an update's message; undefined for an update appstack did not make (or made before it recorded this). */
export function parseUpdateMessage(message: string | undefined): UpdateRecord | undefined {
  const start = message?.lastIndexOf(tag) ?? -1;
  if (!message || start < 0 || !message.endsWith("]")) return undefined;
  try {
    const parsed = JSON.parse(message.slice(start + tag.length, -1)) as Partial<UpdateRecord>;
    if (typeof parsed.generation !== "number" || !(updateWhys as readonly string[]).includes(parsed.why ?? "")) return undefined;
    return parsed as UpdateRecord;
  } catch {
    return undefined;
  }
}

/** What a stack operation's report says of why it ran: its message's record. */
export function operationRecord(message: string | undefined): Pick<StackOperation, "update"> {
  const record = parseUpdateMessage(message);
  return record ? { update: record } : {};
}
