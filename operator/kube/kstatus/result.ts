// kstatus's result (status.go's Result and Condition) and its readers of .status.conditions
// (util.go's GetObjectWithConditions, newInProgressStatus, newFailedStatus).
import { goKind, isMap, type Json } from "./fields.ts";

export type KstatusStatus = "InProgress" | "Current" | "Failed" | "Terminating";

/** The standard condition kstatus says an object should carry: abnormal-true, so only ever True. */
export interface KstatusCondition {
  readonly type: "Reconciling" | "Stalled";
  readonly status: "True";
  readonly reason: string;
  readonly message: string;
}

export interface KstatusResult {
  readonly status: KstatusStatus;
  readonly message: string;
  readonly conditions: readonly KstatusCondition[];
}

/** One of .status.conditions, as kstatus reads it (BasicCondition): a missing field is "". */
export interface BasicCondition {
  readonly type: string;
  readonly status: string;
  readonly reason: string;
  readonly message: string;
}

export const current = (message: string): KstatusResult => ({ status: "Current", message, conditions: [] });

export const inProgress = (reason: string, message: string): KstatusResult => ({
  status: "InProgress",
  message,
  conditions: [{ type: "Reconciling", status: "True", reason, message }],
});

export const failed = (reason: string, message: string): KstatusResult => ({
  status: "Failed",
  message,
  conditions: [{ type: "Stalled", status: "True", reason, message }],
});

/**
 * .status.conditions as runtime.DefaultUnstructuredConverter fills kstatus's struct from it: null
 * anywhere is empty, a field of another shape is an error with the converter's words.
 */
export function conditionsOf(object: Json): BasicCondition[] {
  const status = object["status"];
  if (status === null || status === undefined) return [];
  if (!isMap(status)) throw new Error(`cannot restore struct from: ${goKind(status)}`);
  const conditions = status["conditions"];
  if (conditions === null || conditions === undefined) return [];
  if (!Array.isArray(conditions)) throw new Error(`cannot restore slice from ${goKind(conditions)}`);
  return conditions.map((condition: unknown) => {
    if (condition === null || condition === undefined) return { type: "", status: "", reason: "", message: "" };
    if (!isMap(condition)) throw new Error(`cannot restore struct from: ${goKind(condition)}`);
    return { type: stringOf(condition["type"]), status: stringOf(condition["status"]), reason: stringOf(condition["reason"]), message: stringOf(condition["message"]) };
  });
}

/** A string field of the converter: an integer is "cannot convert", any other non-string is unrecognized. */
function stringOf(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (goKind(value) === "int64") throw new Error("cannot convert int64 to string");
  throw new Error("unrecognized type: string");
}

/** getConditionWithStatus: the first condition of that type with that status. */
export function conditionWithStatus(conditions: readonly BasicCondition[], type: string, status: string): BasicCondition | undefined {
  return conditions.find((c) => c.type === type && c.status === status);
}
