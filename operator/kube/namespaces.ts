// Whether an object's namespace is being deleted: then a stack whose destroy keeps failing is
// forgotten instead, since the namespace's deletion takes the children with it.
import type { CoreV1Api } from "@kubernetes/client-node";
import type { Logger } from "../base/log.ts";
import { briefError } from "./clients.ts";

/**
 * False when the namespace cannot be read: the destroy is then retried with backoff, and the read
 * with it. Said at warn, since a read that always fails (RBAC without get on namespaces) would keep
 * such an object's finalizer for ever.
 */
export async function namespaceTerminating(core: Pick<CoreV1Api, "readNamespace">, namespace: string, log: Logger): Promise<boolean> {
  try {
    const ns = await core.readNamespace({ name: namespace });
    return ns.status?.phase === "Terminating";
  } catch (error) {
    log.warn("could not read the namespace to tell whether it is terminating; taking it for not terminating", { namespace, error: briefError(error) });
    return false;
  }
}
