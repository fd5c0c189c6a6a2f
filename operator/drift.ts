// Whether an object needs Pulumi at all. After each successful `up` the operator records what it
// applied (the object's generation, the children's identities and generations); a reconcile that
// finds the same again starts no Pulumi process, and one that finds a child changed out of band
// repairs it with refresh and up.
export const programVersion = "1";

export interface Applied {
  readonly programVersion: string;
  readonly generation: number;
  readonly deploymentUid: string;
  readonly deploymentGeneration: number;
  /** Empty when the object has no Service. */
  readonly serviceUid: string;
}

export interface LiveChildren {
  readonly deployment?: { readonly uid: string; readonly generation: number };
  readonly serviceUid?: string;
}

export type Decision = { action: "none" } | { action: "apply"; reason: string } | { action: "repair"; reason: string };

export function encodeApplied(applied: Applied): string {
  return `v=${applied.programVersion};g=${applied.generation};d=${applied.deploymentUid}@${applied.deploymentGeneration};s=${applied.serviceUid}`;
}

export function decodeApplied(text: string | undefined): Applied | undefined {
  const match = /^v=([^;]+);g=(\d+);d=([^@;]+)@(\d+);s=([^;]*)$/.exec(text ?? "");
  if (!match) return undefined;
  return {
    programVersion: match[1]!,
    generation: Number(match[2]),
    deploymentUid: match[3]!,
    deploymentGeneration: Number(match[4]),
    serviceUid: match[5]!,
  };
}

export function decide(generation: number, applied: Applied | undefined, live: LiveChildren): Decision {
  if (!applied) return { action: "apply", reason: "never applied" };
  if (applied.programVersion !== programVersion) return { action: "apply", reason: "the operator's program changed" };
  if (applied.generation !== generation) return { action: "apply", reason: `spec changed (generation ${applied.generation} -> ${generation})` };
  if (!live.deployment) return { action: "repair", reason: "the Deployment was deleted" };
  if (live.deployment.uid !== applied.deploymentUid) return { action: "repair", reason: "the Deployment was replaced" };
  // A lower generation only means the cache has not caught up with our own update yet.
  if (live.deployment.generation > applied.deploymentGeneration) return { action: "repair", reason: "the Deployment was changed" };
  // A Service that appears for an object without a port is not ours to judge: Pulumi never made it.
  if (applied.serviceUid && live.serviceUid !== applied.serviceUid) return { action: "repair", reason: "the Service was deleted or replaced" };
  return { action: "none" };
}

/**
 * What a preview was computed against: the operator's program, the spec's generation and the live
 * children. An approval is honoured only while this is unchanged, so a plan is never applied to a
 * spec or a cluster it was not made for.
 */
export function previewBasis(generation: number, live: LiveChildren): string {
  const deployment = live.deployment ? `${live.deployment.uid}@${live.deployment.generation}` : "none";
  return `v=${programVersion};g=${generation};d=${deployment};s=${live.serviceUid ?? "none"}`;
}
