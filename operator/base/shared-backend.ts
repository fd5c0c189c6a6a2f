// Which Pulumi backends more than one replica can share. Both the install (at preview, from the
// URL it is given) and the operator (at start, wherever its URL came from: a Secret the install
// never sees, a flag, the environment) ask here, so the two cannot disagree.

/** Whether `backendUrl` is PostgreSQL, as the operator tells backends apart (operator/pulumi/state-store.ts). */
export function isPostgresUrl(backendUrl: string | undefined): boolean {
  return backendUrl?.startsWith("postgres://") === true || backendUrl?.startsWith("postgresql://") === true;
}

/**
 * Why replicas cannot share the backend of `backendUrl`; undefined for PostgreSQL. Names its
 * scheme only: the URL may carry a password.
 */
export function sharedBackendRefusal(backendUrl: string): string | undefined {
  if (isPostgresUrl(backendUrl)) return undefined;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(backendUrl)?.[1];
  if (scheme === "file") return "not file://: replicas share no folder, so each would keep its stacks in its own (a pod's emptyDir, lost at its restart)";
  // Cloud buckets and the rest: the operator reads and breaks stack locks in file and PostgreSQL state only.
  return `not ${scheme ? `${scheme}://` : "this URL"}: the operator breaks a killed replica's stack lock only in PostgreSQL (or a single replica's file backend), so there it would stay for ever`;
}
