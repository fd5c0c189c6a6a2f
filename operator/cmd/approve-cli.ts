// `appstack approve app/web`: shows the plan waiting in status.preview, asks on a terminal, then
// sets the approval annotation to that plan's id. The write carries the resourceVersion the plan
// was read at: when the object changed since, the API server refuses it (409), and the plan is
// read again: the same plan is approved, another one is refused, since the person saw a
// different one. The operator applies only the waiting plan of that id (controller/approval.ts).
// Writing the annotation takes the RBAC verb approve besides patch (crds/approval.ts): a refusal
// says which rule grants it.
import { createInterface } from "node:readline/promises";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { approvalPolicyName, approvalRights } from "../../crds/approval.ts";
import { approveAnnotation, type PreviewStatus, type Workload, type WorkloadKind } from "../../crds/types.ts";
import { isConflict, readWorkload, type KubeClients } from "../kube/clients.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { cliClients, errorText, kubeOptions, namespaceOf, parseObjectRef, objectRefUsage } from "./kube-flags.ts";
import { age } from "./table.ts";
import { groupOfKind, pluralOf, resourceOf } from "../../components/kinds.ts";

export const approveUsage = `usage: appstack approve ${objectRefUsage} [--yes] [-n NS] [--context=NAME] [--kubeconfig=PATH] [--as=USER]
  shows the plan waiting for approval (updatePolicy Preview), asks, and approves exactly that plan;
  --yes approves without asking (required when not on a terminal). Exit code 0: approved, 1: not.`;

/** The field manager of the approval write: a person's, through this command. */
export const approveFieldManager = "appstack-approve";

/** How often a write that met a newer resourceVersion is tried again with the same plan. */
const conflictRetries = 5;

/** The waiting plan as a person reads it: its id, why, when, and each step that changes something. */
export function describePlan(label: string, preview: PreviewStatus, now = new Date()): string {
  const steps = preview.steps.filter((step) => step.step !== "same");
  const lines = steps.map((step) => `  ${step.step.padEnd(8)} ${step.type} ${step.name}${step.paths?.length ? `: ${step.paths.join(", ")}` : ""}`);
  const unchanged = preview.steps.length - steps.length;
  return [
    `${label}: plan ${preview.planId} waits for approval`,
    `  why: ${preview.reason}; generation ${preview.generation}; previewed ${age(preview.time, now)} ago`,
    ...lines,
    ...(unchanged ? [`  (${unchanged} unchanged)`] : []),
  ].join("\n") + "\n";
}

class Refused extends Error {}

/**
 * The API server's 403 to the approval's write, and what grants it: the approval policy's refusal
 * already names the rule (approve); RBAC's names the verb patch only, though approve is needed too.
 */
function forbidden(error: unknown, kind: WorkloadKind): Refused | undefined {
  if ((error as { code?: number } | null)?.code !== 403) return undefined;
  const text = errorText(error);
  return new Refused(`not approved: ${text}${text.includes(approvalPolicyName) ? "" : `; ${approvalRights(pluralOf(kind), groupOfKind(kind), ["patch", "approve"])}`}`);
}

async function confirm(planId: string): Promise<void> {
  if (!process.stdin.isTTY) throw new Refused(`not approved: there is no terminal to ask on; pass --yes to approve plan ${planId} without asking`);
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await prompt.question(`approve plan ${planId}? [y/N] `)).trim().toLowerCase();
    if (answer !== "y" && answer !== "yes") throw new Refused("not approved");
  } finally {
    prompt.close();
  }
}

/** The annotation, if the object is still at `resourceVersion`; a 403 says what grants it. */
async function writeApproval(clients: KubeClients, kind: WorkloadKind, object: Workload, planId: string): Promise<void> {
  const body = { metadata: { resourceVersion: object.metadata.resourceVersion, annotations: { [approveAnnotation]: planId } } };
  try {
    await clients.custom.patchNamespacedCustomObject(
      { ...resourceOf(kind), namespace: object.metadata.namespace, name: object.metadata.name, body, fieldManager: approveFieldManager },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  } catch (error) {
    throw forbidden(error, kind) ?? error;
  }
}

/** The object and the plan that waits in its status; refused when none waits. */
async function waitingPlan(clients: KubeClients, key: { kind: WorkloadKind; namespace: string; name: string }, label: string): Promise<{ object: Workload; shown: PreviewStatus }> {
  const object = await readWorkload(clients, key);
  if (!object) throw new Refused(`${label} does not exist`);
  const shown = object.status?.preview;
  if (!shown) throw new Refused(`${label}: no plan is waiting for approval${object.spec.updatePolicy === "Preview" ? "" : " (its updatePolicy is Auto: changes are applied without one)"}`);
  return { object, shown };
}

/** kubectl's flags (-A and -o refused: one object, no data) and --yes. */
export const approveOptions = { ...kubeOptions, yes: { type: "boolean", short: "y" } } as const;

async function approve(argv: readonly string[]): Promise<string> {
  const { values, positionals } = parseCommandLine(argv, approveOptions, approveUsage);
  if (positionals.length !== 1) throw new UsageError(`name one object\n${approveUsage}`);
  const { kind, name } = parseObjectRef(positionals[0], approveUsage);
  if (values["all-namespaces"] || values.output) throw new UsageError(`approve takes one object in one namespace, and prints no data (no -A, no -o)\n${approveUsage}`);
  const clients = cliClients(values);
  const key = { kind, namespace: namespaceOf(values, clients.config), name };
  const label = `${kind.toLowerCase()}/${name} in namespace ${key.namespace}`;
  const waitingNow = await waitingPlan(clients, key, label);
  const shown = waitingNow.shown;
  let object = waitingNow.object;
  process.stdout.write(describePlan(label, shown));
  if (!values.yes) await confirm(shown.planId);
  for (let attempt = 0; ; attempt++) {
    try {
      await writeApproval(clients, kind, object, shown.planId);
      return `approved plan ${shown.planId} of ${label}; the operator applies it next (see \`appstack history ${kind.toLowerCase()}/${name}\`)`;
    } catch (error) {
      if (!isConflict(error) || attempt >= conflictRetries) throw error;
    }
    // The object changed since it was read: the approval stands only for the plan the person saw.
    const reread = await readWorkload(clients, key);
    if (!reread) throw new Refused(`not approved: ${label} was deleted`);
    object = reread;
    const waiting = object.status?.preview;
    if (waiting?.planId !== shown.planId) {
      throw new Refused(`not approved: the plan changed while it was shown (plan ${shown.planId} is ${waiting ? `replaced by plan ${waiting.planId}` : "no longer waiting"}); run the command again to see ${waiting ? "the new one" : "the object's state"}`);
    }
  }
}

export async function runApproveCli(argv: readonly string[]): Promise<number> {
  try {
    process.stderr.write((await approve(argv)) + "\n");
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`appstack approve: ${errorText(error)}\n`);
    return 1;
  }
}
