// The securityContext of the children's pods, from the object's podSecurity: nothing under
// Baseline (the image's own user, as before the field existed), and under Restricted exactly what
// the Pod Security Standard `restricted` checks, so a namespace that enforces it admits the pods.
import type * as k8s from "@pulumi/kubernetes";
import type { PodSecurity, PodSecurityProfile } from "../crds/types.ts";

type PodSecurityContext = k8s.types.input.core.v1.PodSecurityContext;
type ContainerSecurityContext = k8s.types.input.core.v1.SecurityContext;

export interface SecurityContexts {
  readonly pod?: PodSecurityContext;
  readonly container?: ContainerSecurityContext;
}

/** The kind's defaults, for what the object leaves out. */
export interface PodSecurityDefaults {
  readonly profile: PodSecurityProfile;
  readonly runAsUser?: number;
}

export function securityContexts(given: PodSecurity | undefined, defaults: PodSecurityDefaults): SecurityContexts {
  const profile = given?.profile ?? defaults.profile;
  // The kind's default user goes with its default profile only: a Baseline Memcached runs as its image says.
  const runAsUser = given?.runAsUser ?? (profile === defaults.profile ? defaults.runAsUser : undefined);
  const user = runAsUser === undefined ? {} : { runAsUser };
  if (profile === "Baseline") return runAsUser === undefined ? {} : { pod: user };
  return {
    pod: { runAsNonRoot: true, ...user, seccompProfile: { type: "RuntimeDefault" } },
    container: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
  };
}
