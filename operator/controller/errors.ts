// Why a reconcile failed, in one CamelCase word: the reason on the object's condition and Event,
// and the `reason` label of appstack_reconcile_errors_total.
import { StateFolderUnanswered } from "../pulumi/state-io.ts";

/**
 * A failure the reconciler has already logged and shown on the object (condition and Event).
 * Thrown so that the work queue retries with backoff; nothing else needs to report it again.
 */
export class ReportedFailure extends Error {
  readonly reason: string;

  constructor(
    reason: string,
    message: string,
  ) {
    super(message);
    this.reason = reason;
  }
}

const apiReasons: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  410: "Gone",
  422: "Invalid",
  429: "TooManyRequests",
};

/** Errors of the state folder's file system, as Node names them: the stack state cannot be written. */
const storageCodes = new Set(["ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EIO"]);

/** The same, as the Pulumi engine and CLI word them in their messages. */
const storageMessage = /no space left on device|disk quota exceeded|read-only file system/i;

/** Whether `message` says the stack state could not be written (a full or read-only state folder). */
export function isStateUnwritable(message: string): boolean {
  return storageMessage.test(message);
}

/** The reason of any error a reconcile can end with. */
export function errorReason(error: unknown): string {
  if (error instanceof ReportedFailure) return error.reason;
  // A state-folder call past the operation deadline: as an operation past it is named.
  if (error instanceof StateFolderUnanswered) return "OperationTimedOut";
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === "number") return apiReasons[code] ?? (code >= 500 ? "APIServerError" : `HTTP${code}`);
  if (typeof code === "string" && storageCodes.has(code)) return "StateUnwritable";
  if (error instanceof Error && isStateUnwritable(error.message)) return "StateUnwritable";
  // Network failures of the API client (ECONNREFUSED, ETIMEDOUT, ...).
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return "APIUnreachable";
  return "InternalError";
}
