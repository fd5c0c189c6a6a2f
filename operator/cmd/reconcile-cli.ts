// `appstack reconcile app/web`: asks the operator to reconcile now (a refresh and `up`, even when
// nothing seems to differ) by setting the annotation appstack.dev/reconcile-requested-at to the
// current time, then waits until status.lastHandledReconcileAt says that request was handled and
// the object has come to a result: Ready for its generation (exit 0), Stalled (exit 1), a plan
// waiting for approval under updatePolicy Preview (exit 3, as `appstack status`), or the deadline
// (exit 1), or a new spec held back by spec.dependsOn, answered at once naming the dependencies
// (exit 1). As `flux reconcile`. A suspended object handles no request: refused.
import { setTimeout as sleep } from "node:timers/promises";
import { reconcileRequestAnnotation, type Workload } from "../../crds/types.ts";
import { mergePatch, readWorkload } from "../kube/clients.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { cliClients, errorText, kubeOptions, namespaceOf, parseObjectRef, objectRefUsage } from "./kube-flags.ts";
import { needsPersonExitCode } from "./status-cli.ts";
import { resourceOf } from "../../components/kinds.ts";

export const reconcileUsage = `usage: appstack reconcile ${objectRefUsage} [--timeout=5m] [-n NS] [--context=NAME] [--kubeconfig=PATH] [--as=USER]
  runs a refresh and pulumi up now (annotation ${reconcileRequestAnnotation}) and waits for the result,
  at most --timeout (a duration as 90s, 5m or 1h; default 5m).
  Exit code 0: Ready; 1: Stalled, held back by spec.dependsOn (DependencyNotReady, the dependencies named),
  past the timeout, or an error; 3: handled, and a plan waits for approval (updatePolicy Preview).`;

/** The field manager of the write: a person's, through this command. */
export const reconcileFieldManager = "appstack-reconcile";

const defaultTimeoutMs = 5 * 60_000;
const pollMs = 500;

/** `90s`, `5m`, `1h` or a number of seconds, as kubectl's --timeout. */
export function parseTimeout(text: string | undefined): number {
  if (text === undefined) return defaultTimeoutMs;
  const match = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(text);
  if (!match) throw new UsageError(`--timeout takes a duration such as 90s, 5m or 1h, not ${JSON.stringify(text)}\n${reconcileUsage}`);
  const unit = (match[2] ?? "s") as "s" | "m" | "h";
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[unit];
}

export type ReconcileOutcome =
  | { readonly done: false; readonly why: string }
  | { readonly done: true; readonly exitCode: number; readonly message: string };

/** Where the request `requestedAt` stands on `object` as the API server has it now. */
export function reconcileOutcome(object: Workload | undefined, requestedAt: string): ReconcileOutcome {
  if (!object) return { done: true, exitCode: 1, message: "the object was deleted" };
  if (object.status?.lastHandledReconcileAt !== requestedAt) return { done: false, why: "the operator has not handled the request yet" };
  const generation = object.metadata.generation;
  const condition = (type: string) => object.status?.conditions?.find((c) => c.type === type && c.status === "True" && c.observedGeneration === generation);
  const stalled = condition("Stalled");
  if (stalled) return { done: true, exitCode: 1, message: `Stalled (${stalled.reason}): ${stalled.message}` };
  const held = object.status?.conditions?.find((c) => c.type === "Ready" && c.reason === "DependencyNotReady");
  if (held) return { done: true, exitCode: 1, message: `held back by spec.dependsOn (DependencyNotReady): ${held.message}` };
  if (object.status?.preview) return { done: true, exitCode: needsPersonExitCode, message: `refreshed; plan ${object.status.preview.planId} waits for approval (appstack approve)` };
  const ready = condition("Ready");
  if (ready && object.status?.observedGeneration === generation) return { done: true, exitCode: 0, message: `Ready: ${ready.message}` };
  const reason = object.status?.conditions?.find((c) => c.type === "Ready")?.reason ?? "no conditions";
  return { done: false, why: `not Ready yet (${reason})` };
}

/** kubectl's flags (-A and -o refused: one object, no data) and --timeout. */
export const reconcileOptions = { ...kubeOptions, timeout: { type: "string" } } as const;

async function reconcile(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, reconcileOptions, reconcileUsage);
  if (positionals.length !== 1) throw new UsageError(`name one object\n${reconcileUsage}`);
  if (values["all-namespaces"] || values.output) throw new UsageError(`reconcile takes one object in one namespace, and prints no data (no -A, no -o)\n${reconcileUsage}`);
  const { kind, name } = parseObjectRef(positionals[0], reconcileUsage);
  const deadline = Date.now() + parseTimeout(values.timeout);
  const clients = cliClients(values);
  const key = { kind, namespace: namespaceOf(values, clients.config), name };
  const label = `${kind.toLowerCase()}/${name} in namespace ${key.namespace}`;
  const object = await readWorkload(clients, key);
  if (!object) throw new Error(`${label} does not exist`);
  if (object.spec.suspend) throw new Error(`${label} is suspended: it handles no reconcile request until \`appstack resume\``);
  const requestedAt = new Date().toISOString();
  const body = { metadata: { annotations: { [reconcileRequestAnnotation]: requestedAt } } };
  await clients.custom.patchNamespacedCustomObject({ ...resourceOf(kind), namespace: key.namespace, name, body, fieldManager: reconcileFieldManager }, mergePatch);
  process.stderr.write(`requested a reconcile of ${label} (${reconcileRequestAnnotation}: ${requestedAt}); waiting for it\n`);
  for (;;) {
    const outcome = reconcileOutcome(await readWorkload(clients, key), requestedAt);
    if (outcome.done) {
      process.stderr.write(`${label}: ${outcome.message}\n`);
      return outcome.exitCode;
    }
    if (Date.now() >= deadline) throw new Error(`${label}: the deadline passed: ${outcome.why}`);
    await sleep(pollMs);
  }
}

export async function runReconcileCli(argv: readonly string[]): Promise<number> {
  try {
    return await reconcile(argv);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`appstack reconcile: ${errorText(error)}\n`);
    return 1;
  }
}
