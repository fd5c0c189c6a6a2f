// Events on the objects, as `kubectl describe` shows them. The same reason and message for the
// same object within a few minutes is recorded once, so retries do not flood the namespace.
import { hostname } from "node:os";
import type { CoreV1Event } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { briefError, keyOf, keyString, type KubeClients } from "../kube/clients.ts";
import type { Logger } from "../base/log.ts";
import { redactKnownSecrets } from "../base/redact.ts";
import type { ConditionReason, EventReason } from "./reasons.ts";

const repeatWindowMs = 5 * 60_000;

export type EventType = "Normal" | "Warning";

export class EventRecorder {
  private readonly recent = new Map<string, number>();

  private readonly clients: KubeClients;
  private readonly log: Logger;

  constructor(
    clients: KubeClients,
    log: Logger,
  ) {
    this.clients = clients;
    this.log = log;
  }

  /**
   * Forgets which Events the object of `objectKey` (its work key: kind/namespace/name) had, whatever
   * its uid: it left this replica's share, and what is said when it comes back is news. By key, not
   * uid, since a replica may learn of the move only once its cache has dropped the object (a dead
   * owner's objects, reassigned at once).
   */
  forget(objectKey: string): void {
    for (const key of this.recent.keys()) if (key.startsWith(`${objectKey}|`)) this.recent.delete(key);
  }

  /** `reason`: one a condition carries, or one of an Event alone (reasons.ts). */
  record(object: Workload, type: EventType, reason: ConditionReason | EventReason, given: string): void {
    const message = redactKnownSecrets(given);
    // The uid too: a new object of the same name is another object, and its Events are news.
    const key = `${keyString(keyOf(object))}|${object.metadata.uid}/${reason}/${message}`;
    const now = Date.now();
    const last = this.recent.get(key);
    if (last !== undefined && now - last < repeatWindowMs) return;
    this.recent.set(key, now);
    if (this.recent.size > 10_000) this.recent.clear();
    const stamp = new Date(now);
    const event: CoreV1Event = {
      metadata: { generateName: `${object.metadata.name}.`, namespace: object.metadata.namespace },
      involvedObject: {
        apiVersion: object.apiVersion,
        kind: object.kind,
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        uid: object.metadata.uid,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      source: { component: "appstack" },
      reportingComponent: "appstack.dev/operator",
      reportingInstance: hostname(),
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
    };
    // Events are best effort: a lost one must never fail a reconcile, but is said (a Role without
    // create on events loses every one).
    this.clients.core.createNamespacedEvent({ namespace: object.metadata.namespace, body: event }).catch((error: unknown) => {
      this.log.warn("could not record an event", { object: `${object.kind}/${object.metadata.namespace}/${object.metadata.name}`, type, reason, error: briefError(error) });
    });
  }
}
