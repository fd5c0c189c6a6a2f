// `appstack status` (or `get`): every App and Memcached in scope in one table, read from their
// status: ready, drifted (which fields), awaiting approval (the plan and its age), stalled (why).
// Exit code 3 when any needs a person (a plan awaits approval, or it is stalled: failed, in
// conflict, paused), so that scripts and CI can wait on it; 0 when none does; 1 on an error.
import { type Workload, type WorkloadKind } from "../../crds/types.ts";
import { resourceOf, workloadKinds } from "../../components/kinds.ts";
import { driftField } from "../pulumi/update-messages.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { cliClients, errorText, kubeFlagsUsage, kubeOptions, namespaceOf, outputFormat, printData, kindsInWords } from "./kube-flags.ts";
import { age, table } from "./table.ts";

export const statusUsage = `usage: appstack status [flags]   (also: appstack get)
  every ${kindsInWords("and")} in the namespace (-A: in all): ready, drifted, awaiting approval, stalled.
  Exit code 0: nothing needs a person; 3: something does (awaiting approval or stalled); 1: error.
${kubeFlagsUsage}`;

/** The exit code when an object needs a person. */
export const needsPersonExitCode = 3;

export interface ObjectState {
  readonly kind: WorkloadKind;
  readonly namespace: string;
  readonly name: string;
  /** Ready is True for the object's current generation. */
  readonly ready: boolean;
  /** The Ready condition's reason (Available, RollingOut, AwaitingApproval, ...). */
  readonly reason: string;
  /** What differs from what was applied, while it is repaired or waits for approval; empty when nothing does. */
  readonly drifted: string[];
  readonly awaitingApproval?: { readonly plan: string; readonly since: string; readonly reason: string };
  readonly stalled?: { readonly reason: string; readonly message: string };
  /** Pods that cannot start (status.podsNotStarting), with the Ready condition's reason for them. */
  readonly podsNotStarting: number;
  /** spec.suspend: nothing is applied or repaired; `ready` says whether the current spec is live all the same. */
  readonly suspended: boolean;
  readonly needsPerson: boolean;
}

/**
 * The differences named in a reason or message: `drift: a; b; and N more` (a repair, a preview's
 * reason) or `the children changed while or after they were applied: a; b` (DriftDetected).
 */
function driftIn(text: string | undefined): string[] {
  const listed = /(?:^|\b)(?:drift|were applied): (.*)$/.exec(text ?? "")?.[1];
  if (!listed) return [];
  return listed.split("; ").filter((part) => !/^and \d+ more$/.test(part)).map(driftField);
}

/** What differs from what was applied: named by the plan waiting for approval, by the repair under way, or by a suspended object's Ready condition. */
function driftOf(object: Workload): string[] {
  const reconciling = object.status?.conditions?.find((c) => c.type === "Reconciling" && c.status === "True");
  const repairing = reconciling && ["RepairingDrift", "DriftDetected"].includes(reconciling.reason) ? reconciling.message : undefined;
  const suspended = object.status?.conditions?.find((c) => c.type === "Ready" && c.reason === "Suspended")?.message;
  return driftIn(object.status?.preview?.reason ?? repairing ?? suspended);
}

export function objectState(object: Workload): ObjectState {
  const conditions = object.status?.conditions ?? [];
  const ready = conditions.find((c) => c.type === "Ready");
  const stalled = conditions.find((c) => c.type === "Stalled" && c.status === "True");
  const preview = object.status?.preview;
  const drifted = driftOf(object);
  const current = ready?.observedGeneration === undefined || ready.observedGeneration === object.metadata.generation;
  return {
    kind: object.kind,
    namespace: object.metadata.namespace,
    name: object.metadata.name,
    ready: ready?.status === "True" && current,
    reason: ready?.reason ?? "NotReconciled",
    drifted,
    ...(preview ? { awaitingApproval: { plan: preview.planId, since: preview.time, reason: preview.reason } } : {}),
    ...(stalled ? { stalled: { reason: stalled.reason, message: stalled.message } } : {}),
    podsNotStarting: object.status?.podsNotStarting ?? 0,
    suspended: object.spec.suspend === true,
    needsPerson: preview !== undefined || stalled !== undefined,
  };
}

export function statusTable(states: readonly ObjectState[], allNamespaces: boolean, now = new Date()): string {
  const headers = [...(allNamespaces ? ["namespace"] : []), "name", "ready", "drifted", "awaiting approval", "stalled"];
  return table(
    headers,
    states.map((s) => [
      ...(allNamespaces ? [s.namespace] : []),
      `${s.kind.toLowerCase()}/${s.name}`,
      s.ready ? `True${s.suspended ? " (Suspended)" : ""}` : `False (${s.reason}${s.podsNotStarting ? `, ${s.podsNotStarting} pods not starting` : ""})`,
      s.drifted.join("; ") || "-",
      s.awaitingApproval ? `plan ${s.awaitingApproval.plan} (${age(s.awaitingApproval.since, now)})` : "-",
      s.stalled ? `${s.stalled.reason}: ${s.stalled.message}` : "-",
    ]),
  );
}

async function listStates(argv: readonly string[]) {
  const { values, positionals } = parseCommandLine(argv, kubeOptions, statusUsage);
  if (positionals.length) throw new UsageError(`appstack status takes no arguments (use -n or -A)\n${statusUsage}`);
  const format = outputFormat(values, statusUsage);
  const clients = cliClients(values);
  const all = values["all-namespaces"] === true;
  const namespace = namespaceOf(values, clients.config);
  const objects: Workload[] = [];
  for (const kind of workloadKinds()) {
    const target = resourceOf(kind);
    const list = (all ? await clients.custom.listClusterCustomObject(target) : await clients.custom.listNamespacedCustomObject({ ...target, namespace })) as { items: Workload[] };
    objects.push(...list.items.map((item) => ({ ...item, kind })));
  }
  objects.sort((a, b) => a.metadata.namespace.localeCompare(b.metadata.namespace) || a.kind.localeCompare(b.kind) || a.metadata.name.localeCompare(b.metadata.name));
  return { states: objects.map(objectState), format, all, namespace };
}

export async function runStatusCli(argv: readonly string[]): Promise<number> {
  try {
    const { states, format, all, namespace } = await listStates(argv);
    if (format !== "table") process.stdout.write(printData(format, states));
    else if (!states.length) process.stderr.write(`no ${kindsInWords("or")} ${all ? "in any namespace" : `in namespace ${namespace}`}\n`);
    else process.stdout.write(statusTable(states, all));
    return states.some((s) => s.needsPerson) ? needsPersonExitCode : 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`appstack status: ${errorText(error)}\n`);
    return 1;
  }
}
