// Whether an object's children are current, whatever their kinds. The object's Deployment (the
// first a kind makes, whose pods are the object's) is read as `kubectl rollout status` reads it
// (status.ts), with its own reasons, which the pods' trouble refines. Every other child is read as
// kstatus reads it (operator/kube/kstatus, cli-utils' status.Compute): a StatefulSet's rollout, a
// PVC's binding, a Job's failure, a custom resource's Ready, Reconciling and Stalled conditions,
// and for any kind the generation its controller has observed. Ready only when every child is.
import type { KubernetesObject } from "@kubernetes/client-node";
import { childKindNamed } from "../../components/kinds.ts";
import type { Workload } from "../../crds/types.ts";
import { kstatusOf, type KstatusResult } from "../kube/kstatus/index.ts";
import type { ChildState, Observed } from "./children.ts";
import type { ChildPhase } from "./conditions.ts";
import { rolloutPhase } from "./status.ts";

/**
 * The children's phase: the first child that cannot go on (Stalled), else the first still under
 * way (Reconciling), the Deployment's before any other so that its rollout's reasons and the pods'
 * trouble show; else Ready, with the Deployment's message where there is one.
 */
export function childrenPhase(object: Workload, observed: Pick<Observed, "children" | "deployment">): ChildPhase {
  const rollout = observed.children.find(({ child }) => child.kind === "Deployment");
  const verdicts: ChildPhase[] = [
    ...(rollout ? [rolloutPhase(object, observed.deployment)] : []),
    ...observed.children.filter((state) => state !== rollout).map(childPhase),
  ];
  const pending = verdicts.find((verdict) => verdict.kind === "stalled") ?? verdicts.find((verdict) => verdict.kind === "progressing");
  if (pending) return pending;
  if (rollout) return verdicts[0]!;
  return { kind: "ready", message: "every child is current" };
}

/** One child other than the object's Deployment, by kstatus's status of it. */
export function childPhase(state: ChildState): ChildPhase {
  const label = `${state.child.kind} ${state.child.name}`;
  // NotFound to kstatus. A foreign one is the conflict's to report (reporting.ts); it is not ours either.
  if (state.state !== "owned") return { kind: "progressing", reason: "Creating", message: `the ${label} does not exist yet` };
  let result: KstatusResult;
  try {
    result = kstatusOf(asRead(state.child.kind, state.live));
  } catch (error) {
    // Unknown to kstatus (a status field of the wrong type, a Pod in a phase it does not know): not current.
    return { kind: "progressing", reason: "ChildProgressing", message: `the status of the ${label} cannot be read: ${(error as Error).message}` };
  }
  const said = words(result);
  switch (result.status) {
    case "Current":
      return { kind: "ready", message: `the ${label} is current` };
    case "InProgress":
      return { kind: "progressing", reason: "ChildProgressing", message: `the ${label} is not current yet${said}` };
    case "Terminating":
      return { kind: "progressing", reason: "ChildProgressing", message: `the ${label} is being deleted` };
    case "Failed":
      return { kind: "stalled", reason: "ChildFailed", message: `the ${label} failed${said}` };
  }
}

/**
 * The child as a get or a watch event has it: the items of a list (the informers' first fill)
 * carry no kind or apiVersion, and kstatus chooses its rules by them.
 */
function asRead(kind: string, live: KubernetesObject) {
  const apiVersion = typeof live.apiVersion === "string" ? live.apiVersion : childKindNamed(kind).apiVersion;
  return { ...live, apiVersion, kind };
}

/** kstatus's message, or where it has none (a Ready=False without one), its reason. */
function words(result: KstatusResult): string {
  const text = result.message || result.conditions[0]?.reason || "";
  return text ? `: ${text}` : "";
}
