// An API server that is slow to answer, or that refuses, on demand: a validating admission webhook
// that holds the matching writes until the test lets them go, or denies them. With it a test can
// stop an operation at a known point (a Deployment's create or delete in flight, the stack locked)
// or make one fail (a delete refused) instead of racing it.
import { serveAdmission, type AdmissionServer, type ClusterFiles } from "./admission-server.ts";

export interface Hold {
  /** Resolves when a matching write (not a dry run) reaches the webhook and is being held; rejects after a minute without one. */
  readonly held: Promise<void>;
  /** How many matching writes have reached the webhook so far (each engine that tried sent one). */
  readonly requests: number;
  /** Lets every held write through, and removes the webhook. */
  release(): Promise<void>;
}

export interface Denial {
  /** Resolves when a matching write has been denied; rejects after a minute without one. */
  readonly denied: Promise<void>;
  /** How many matching writes have been denied so far. */
  readonly count: number;
  /** Removes the webhook: later writes pass. */
  remove(): Promise<void>;
}

/** The part of an AdmissionReview request the tests match on. */
export interface AdmissionRequest {
  uid: string;
  operation: string;
  dryRun?: boolean;
  name?: string;
  resource: { resource: string };
  subResource?: string;
  options?: { fieldManager?: string };
  object?: { metadata?: { annotations?: Record<string, string>; labels?: Record<string, string> }; spec?: Record<string, unknown> };
  oldObject?: { metadata?: { annotations?: Record<string, string> } };
}

type Operation = "CREATE" | "UPDATE" | "DELETE";

const probeName = "hold-probe";

const groups = { deployments: "apps", services: "", apps: "appstack.dev", endpointslices: "discovery.k8s.io", leases: "coordination.k8s.io" } as const;

type Resource = keyof typeof groups;

/** The admission response: allowed, or denied with a message. */
type Answer = (allowed: boolean, message?: string) => void;

/**
 * Serves a validating webhook for `operation`s of `resource` in `namespace`: `onRequest` answers
 * each request, at once or later. Returns once the API server calls it.
 */
function startWebhook(local: ClusterFiles, purpose: "hold" | "deny", resource: Resource, operation: Operation, namespace: string, onRequest: (request: AdmissionRequest, answer: Answer) => void): Promise<AdmissionServer> {
  return serveAdmission<AdmissionRequest>(
    local,
    {
      purpose,
      kind: "validating",
      configName: `appstack-test-${purpose}-${resource}-${operation.toLowerCase()}`,
      namespace,
      timeoutSeconds: 30,
      // Deployment creates always pass by the webhook: the probe is one.
      rules: [
        { apiGroups: [groups[resource]], apiVersions: ["*"], resources: [resource], operations: [operation], scope: "Namespaced" },
        { apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations: ["CREATE"], scope: "Namespaced" },
      ],
      probe: { name: probeName },
    },
    (request, answer) => onRequest(request, (allowed, message) => answer({ allowed, ...(allowed ? {} : { status: { code: 403, message } }) })),
  );
}

/**
 * Whether a request is one of `operation` on the object `name` itself (not a dry run, no
 * subresource); `name` undefined: on any object of `resource` (one whose name the API server
 * generates, an EndpointSlice's, is picked by `when`).
 */
function matches(request: AdmissionRequest, resource: Resource, operation: Operation, name: string | undefined): boolean {
  return !request.dryRun && request.operation === operation && (name === undefined || request.name === name) && request.resource.resource === resource && !request.subResource;
}

/** A promise that `settle` resolves, rejected after a minute unless it was; never an unhandled rejection. */
function signal(what: string): { promise: Promise<void>; settle: () => void } {
  let settle!: () => void;
  const promise = new Promise<void>((resolve, reject) => {
    settle = resolve;
    setTimeout(() => reject(new Error(`no ${what} within a minute`)), 60_000).unref();
  });
  // Rejected before anyone waits on it (the test failed earlier), it must not fail the run.
  promise.catch(() => undefined);
  return { promise, settle };
}

/**
 * Holds `operation`s of the Deployments (or Services, Leases) named `name` in `namespace`; with
 * `fieldManager`, only the writes of a matching field manager (the engine's, not a person's); with
 * `when`, only the writes it picks (a Lease's release, not its renewals).
 */
export async function holdWrites(local: ClusterFiles, resource: Resource, operation: Operation, namespace: string, name: string, fieldManager?: RegExp, when: (request: AdmissionRequest) => boolean = () => true): Promise<Hold> {
  const waiting: Array<() => void> = [];
  let requests = 0;
  const held = signal(`${operation} of ${resource} ${namespace}/${name}`);
  const webhook = await startWebhook(local, "hold", resource, operation, namespace, (request, answer) => {
    if (!matches(request, resource, operation, name)) return answer(true);
    if (fieldManager && !fieldManager.test(request.options?.fieldManager ?? "")) return answer(true);
    if (!when(request)) return answer(true);
    requests++;
    waiting.push(() => answer(true));
    held.settle();
  });
  return {
    held: held.promise,
    get requests() {
      return requests;
    },
    async release() {
      await webhook.unregister();
      for (const answer of waiting.splice(0)) answer();
      await webhook.close();
    },
  };
}

/**
 * Denies `operation`s of the object `name` of `resource` in `namespace`, those that `when` picks
 * (all by default), `times` times (until removed by default), with `message`.
 */
export async function denyWrites(local: ClusterFiles, resource: Resource, operation: Operation, namespace: string, name: string | undefined, options: { when?: (request: AdmissionRequest) => boolean; times?: number; message?: string } = {}): Promise<Denial> {
  const { when = () => true, times = Infinity, message = "denied by the test" } = options;
  let count = 0;
  const denied = signal(`denied ${operation} of ${resource} ${namespace}/${name ?? "*"}`);
  const webhook = await startWebhook(local, "deny", resource, operation, namespace, (request, answer) => {
    if (!matches(request, resource, operation, name) || !when(request) || count >= times) return answer(true);
    count++;
    answer(false, message);
    denied.settle();
  });
  return {
    denied: denied.promise,
    get count() {
      return count;
    },
    async remove() {
      await webhook.unregister();
      await webhook.close();
    },
  };
}
