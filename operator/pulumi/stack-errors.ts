// What the stack driver's operations throw, each a decision for its caller, and the engine's
// diagnosis in the few words a status can carry.
import type { StackOperation } from "../../crds/types.ts";

/** The operation failed; the message is the engine's own. */
export class StackOperationFailed extends Error {
  readonly operation: StackOperation;

  constructor(operation: StackOperation) {
    super(operation.message ?? `${operation.kind} failed`);
    this.operation = operation;
  }
}

/** Another live update holds the stack: try again later. */
export class StackBusy extends Error {}

/** The operation did not finish within its deadline: it was cancelled (killed if it had to be) and its stack unlocked. */
export class OperationTimedOut extends StackOperationFailed {
  readonly deadlineMs: number;

  constructor(
    operation: StackOperation,
    deadlineMs: number,
  ) {
    super(operation);
    this.deadlineMs = deadlineMs;
  }
}

/**
 * This replica stopped the operation itself, handing over (past its shutdown grace, or its lease
 * lost): nothing failed, and the next leader carries on with the object.
 */
export class OperationInterrupted extends Error {}

/**
 * The engine's diagnosis in a line or two: its `error:` lines, without the engine's own framing
 * ("update failed", resource URNs), each once.
 */
export function engineMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // The provider wraps its errors as "N error(s) occurred:" with one "* reason" line each.
  const framing = /^(update failed|preview failed|(Preview failed: )?\d+ errors? occurred:?)$/i;
  const reasons = text
    .split("\n")
    .map((line) => (/^\s*\* (.*)$/.exec(line)?.[1] ?? /error: (.*)$/.exec(line)?.[1])?.trim())
    .filter((reason): reason is string => !!reason && !framing.test(reason))
    .map((reason) => reason.replace(/resource "urn:[^"]*" /, ""));
  const unique = [...new Set(reasons)];
  const fallback = text.split("\n").map((l) => l.trim()).filter(Boolean).slice(-3);
  return (unique.length ? unique : fallback).slice(0, 3).join("; ").slice(0, 2000);
}
