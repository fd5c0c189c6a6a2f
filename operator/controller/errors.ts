// Why a reconcile failed, in one CamelCase word: the reason on the object's condition and Event,
// and the `reason` label of appstack_reconcile_errors_total.

/**
 * A failure the reconciler has already logged and shown on the object (condition and Event).
 * Thrown so that the work queue retries with backoff; nothing else needs to report it again.
 */
export class ReportedFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
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

/** The reason of any error a reconcile can end with. */
export function errorReason(error: unknown): string {
  if (error instanceof ReportedFailure) return error.reason;
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code === "number") return apiReasons[code] ?? (code >= 500 ? "APIServerError" : `HTTP${code}`);
  // Network failures of the API client (ECONNREFUSED, ETIMEDOUT, ...).
  if (typeof code === "string" && /^E[A-Z]+$/.test(code)) return "APIUnreachable";
  return "InternalError";
}
