// Hostile input: thousands of generated objects (see helpers/hostile-specs.ts) go through the real
// API server as server-side dry runs; every one is either refused with a message that names what
// is wrong, or accepted. Then a share of the accepted ones is created for real under a running
// operator: each ends Ready with its spec, waiting for approval, or Stalled with a message, the
// operator never restarts, and an object unrelated to them keeps reconciling. Then all are deleted.
// APPSTACK_HOSTILE_INPUTS and APPSTACK_HOSTILE_OBJECTS set the counts; APPSTACK_HOSTILE_SEED replays.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiException, CustomObjectsApi, type KubernetesObject } from "@kubernetes/client-node";
import { type Condition, type Workload, type WorkloadKind } from "../../crds/types.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients } from "../../operator/kube/clients.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { eventsOf, eventually, useCluster } from "../helpers/cluster.ts";
import { hostileObject, type HostileObject } from "../helpers/hostile-specs.ts";
import { disposeOperator, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { seedFrom } from "../helpers/random.ts";
import { pluralOf } from "../../components/kinds.ts";

// 3,000 in `npm test` (about 200 accepted, 30-40 s of dry runs); 10,000 under `npm run soak`.
const inputs = Number(process.env["APPSTACK_HOSTILE_INPUTS"] ?? "3000");
// 30 accepted ones through the operator in `npm test` (each costs an `up` and a `destroy`, so 60 took
// about 3.5 min of a cold CI run); 200 under `npm run soak`.
const throughOperator = Number(process.env["APPSTACK_HOSTILE_OBJECTS"] ?? "30");
const namespace = "default";

let operator: OperatorProcess | undefined;
const cluster = useCluster(undefined, () => disposeOperator(operator));

interface Refusal {
  readonly code: number;
  readonly message: string;
}

async function submit(api: CustomObjectsApi, input: HostileObject, dryRun: boolean): Promise<Workload | Refusal> {
  const kind = input.body["kind"] as WorkloadKind;
  try {
    return (await api.createNamespacedCustomObject({ group: "appstack.dev", version: "v1alpha1", plural: pluralOf(kind), namespace, body: input.body, ...(dryRun ? { dryRun: "All" } : {}), fieldValidation: input.strict ? "Strict" : "Ignore" })) as Workload;
  } catch (error) {
    // Past its 3 MiB request limit the API server may close the connection before the body is
    // all sent, instead of answering 413: the client sees a reset, as kubectl would.
    const size = Buffer.byteLength(JSON.stringify(input.body));
    if (!(error instanceof ApiException) && size > 3 * 1024 * 1024 && /ECONNRESET|EPIPE/.test(String((error as { code?: string }).code))) return { code: 413, message: `connection reset: a body of ${size} bytes, over the API server's request limit` };
    if (!(error instanceof ApiException)) throw error;
    const body = typeof error.body === "string" ? error.body : JSON.stringify(error.body);
    const status = ((): { message?: string } => {
      try {
        return JSON.parse(body) as { message?: string };
      } catch {
        return { message: body };
      }
    })();
    return { code: error.code, message: status.message ?? "" };
  }
}

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index]!, index);
    }
  }));
}

/** What the refusal is about, for the report: the first field the message names, two levels deep. */
function topic(message: string): string {
  if (/unknown field/.test(message)) return "unknown field";
  if (/request entity too large|connection reset/i.test(message)) return "request too large";
  return /\b(spec(?:\.[A-Za-z]+)?|metadata\.[A-Za-z]+)\b/.exec(message)?.[1] ?? message.slice(0, 60);
}

type Outcome = "Ready" | "AwaitingApproval" | "Unschedulable" | `Stalled: ${string}`;

interface Settled {
  readonly outcome: Outcome;
  /** The Ready condition as read with the outcome: a Stalled object is retried, and its next read may say Applying. */
  readonly ready: Condition;
}

/**
 * How the operator left one object: Ready with its spec, waiting for approval, applied but its
 * pods unschedulable (requests no node has), or Stalled with a message.
 */
async function settled(workloads: Workloads, kind: WorkloadKind, name: string): Promise<Settled | undefined> {
  const { metadata, status = {} } = await workloads.get(kind, namespace, name);
  const ready = status.conditions?.find((c) => c.type === "Ready");
  const stalled = status.conditions?.find((c) => c.type === "Stalled" && c.status === "True");
  if (!ready || ready.observedGeneration !== metadata.generation) return undefined;
  const outcome = ((): Outcome | undefined => {
    if (stalled) return `Stalled: ${stalled.reason}`;
    if (ready.reason === "AwaitingApproval") return status.preview?.generation === metadata.generation ? "AwaitingApproval" : undefined;
    if (status.observedGeneration !== metadata.generation) return undefined;
    if (ready.status === "True") return "Ready";
    return ready.reason === "Unschedulable" ? "Unschedulable" : undefined;
  })();
  return outcome && { outcome, ready };
}

test(`${inputs} generated hostile objects through the API server (dry run), ${throughOperator} accepted ones through the operator`, { timeout: 30 * 60_000 }, async () => {
  const random = seedFrom("APPSTACK_HOSTILE_SEED", "hostile input");
  const { kubeconfig } = cluster().cluster;
  await installApi(kubeClients(kubeconfig));
  const api = loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
  const generated = Array.from({ length: inputs }, () => hostileObject(random, namespace));

  const refusals = new Map<string, number>();
  const accepted: HostileObject[] = [];
  const started = Date.now();
  await inParallel(generated, 8, async (input) => {
    const result = await submit(api, input, true);
    if (!("code" in result)) {
      accepted.push(input);
      return;
    }
    // Refused by the API server itself, with a message that says what: never a server error, never empty.
    assert.ok(result.code >= 400 && result.code < 500, `refused with ${result.code}: ${result.message}\n${JSON.stringify(input.body).slice(0, 2000)}`);
    assert.ok(result.message.length > 10, `refused without a message: ${JSON.stringify(input.body).slice(0, 2000)}`);
    const key = `${result.code} ${topic(result.message)}`;
    refusals.set(key, (refusals.get(key) ?? 0) + 1);
  });
  const refused = inputs - accepted.length;
  console.error(`hostile input: ${inputs} objects in ${((Date.now() - started) / 1000).toFixed(1)} s, ${accepted.length} accepted, ${refused} refused`);
  for (const [key, count] of [...refusals].sort((a, b) => b[1] - a[1])) console.error(`  ${String(count).padStart(5)}  ${key}`);
  assert.ok(accepted.length >= throughOperator, `only ${accepted.length} generated objects were accepted`);

  // The accepted ones, under a running operator: first names that are unique, with a sentinel
  // object beside them that must keep reconciling.
  const workloads = new Workloads(kubeconfig);
  operator = await startOperatorProcess(kubeconfig);
  await workloads.create({ kind: "App", metadata: { name: "sentinel", namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80 } });
  await workloads.ready("App", namespace, "sentinel");
  const names = new Set<string>(["sentinel"]);
  // In the order generated, not the order the dry runs answered, so a seed replays the same objects.
  const acceptedSet = new Set(accepted);
  const acceptedInOrder = generated.filter((input) => acceptedSet.has(input));
  const chosen = acceptedInOrder.filter((input) => {
    const name = (input.body["metadata"] as { name: string }).name;
    if (names.has(name)) return false;
    names.add(name);
    return true;
  }).slice(0, throughOperator);
  const created: KubernetesObject[] = [];
  await inParallel(chosen, 4, async (input) => {
    const result = await submit(api, input, false);
    assert.ok(!("code" in result), `accepted by the dry run, refused for real: ${JSON.stringify(result)}`);
    created.push(result);
  });
  await workloads.mergeSpec("App", namespace, "sentinel", { image: "nginx:1.28", replicas: 2 });

  const outcomes = new Map<string, number>();
  await inParallel(created, 4, async (object) => {
    const kind = object.kind as WorkloadKind;
    const name = object.metadata!.name!;
    const { outcome, ready } = await eventually(`${kind} ${name} to settle`, () => settled(workloads, kind, name), 600_000).catch(async (error: unknown) => {
      // A failure that explains itself: what the object asked for and how the operator left it.
      const { metadata, spec, status } = await workloads.get(kind, namespace, name);
      throw new Error(`${String(error)}\ngeneration ${metadata.generation}, spec ${JSON.stringify(spec)}\nstatus ${JSON.stringify(status)}`);
    });
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (outcome === "Ready") {
      const live = await cluster().apps.readNamespacedDeployment({ name, namespace });
      const spec = (await workloads.get(kind, namespace, name)).spec as { image?: string; replicas?: number; size?: number };
      assert.equal(live.spec?.replicas, spec.replicas ?? spec.size, name);
      assert.equal(live.spec?.template.spec?.containers[0]?.image, spec.image, name);
    }
    if (outcome !== "Ready" && outcome !== "AwaitingApproval") {
      assert.ok(ready.message.length > 10, `${name}: ${outcome} without a message`);
      // What the input was refused for, so that a soak's rare outcomes can be read without a replay.
      if (outcome.startsWith("Stalled")) console.error(`  ${kind} ${name}: ${outcome}: ${ready.message.slice(0, 400)}`);
      // A name the children cannot carry is the API server's to refuse, not the engine's to find.
      assert.doesNotMatch(ready.message, /must be no more than 63 characters|DNS-1035/, `${name}: accepted with a name its children cannot have`);
      const warned = () => eventsOf(cluster().core, namespace, name).then((events) => (events.some((e) => e.type === "Warning" && e.reason === ready.reason) ? true : undefined));
      await eventually(`a Warning Event ${ready.reason} on ${name}`, warned, 30_000);
    }
  });
  console.error(`hostile input through the operator: ${created.length} objects: ${[...outcomes].map(([outcome, count]) => `${count} ${outcome}`).join(", ")}`);
  // The sentinel's change is applied; its pods may wait for room that the generated objects
  // took (1,000 replicas is valid input), and then its status says so.
  await eventually("the sentinel's change applied and reported", async () => {
    const deployment = await cluster().apps.readNamespacedDeployment({ name: "sentinel", namespace });
    const sentinel = await workloads.get("App", namespace, "sentinel");
    const ready = sentinel.status?.conditions?.find((c) => c.type === "Ready");
    const applied = deployment.spec?.template.spec?.containers[0]?.image === "nginx:1.28" && deployment.spec.replicas === 2;
    return applied && sentinel.status?.observedGeneration === sentinel.metadata.generation && (ready?.reason === "Available" || ready?.reason === "Unschedulable") ? true : undefined;
  }, 120_000);
  assert.equal(operator.child.exitCode, null, "the operator exited");

  await inParallel(created, 4, async (object) => workloads.delete(object.kind as WorkloadKind, namespace, object.metadata!.name!));
  await inParallel(created, 4, async (object) => workloads.gone(object.kind as WorkloadKind, namespace, object.metadata!.name!, 600_000));
  assert.equal(operator.child.exitCode, null, "the operator exited");
});
