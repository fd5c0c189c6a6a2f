// Every reason appstack writes on an object's conditions (Ready, Reconciling and Stalled carry the
// same reason, conditions.ts), with the phases that give it, when it is given and what to do. The
// phases (conditions.ts) take only reasons listed here for them, so a reason the code uses without
// its entry does not compile; the condition reasons table of docs/api.md is generated from this
// list (operator/cmd/reasons-reference.ts) and test/unit/reasons-reference.test.ts checks both.
// Texts are Markdown, with links relative to docs/.

/** The phases of conditions.ts that write a reason of their own choosing; the others have one each. */
export type ReasonPhase = "ready" | "progressing" | "stalled" | "awaiting" | "suspended" | "deleting";

export interface ReasonEntry {
  /** The phases that give it: which conditions are True follows (conditions.ts). */
  readonly phases: readonly ReasonPhase[];
  /** Who names it when appstack only passes it on: the kubelet, the scheduler, the Deployment. */
  readonly from?: string;
  readonly when: string;
  readonly todo: string;
}

const podStart = "[Pods that cannot start](runbook.md#pods-that-cannot-start)";
const podStartBound = "Reconciling until the trouble has lasted `APPSTACK_POD_START_TIMEOUT_SECONDS` ([Configuration](configuration.md)), Stalled from then on";

/**
 * The kubelet's waiting reasons that no wait ends by itself (pod-trouble.ts): the kubelet retries
 * with a backoff, but the spec (or an image, a Secret, a registry) has to change first.
 */
const podWaiting = {
  ImagePullBackOff: { when: "a container's image cannot be pulled, and the kubelet waits before it tries again; the message names the image and the kubelet's words", todo: `fix the image's name or tag, or the pull Secret, or the registry's reachability (${podStart})` },
  ErrImagePull: { when: "a container's image pull failed; the message names the image and the kubelet's words", todo: `as for \`ImagePullBackOff\` (${podStart})` },
  ErrImageNeverPull: { when: "the image is not on the node and the pull policy is `Never`", todo: "load the image on the nodes, or let it be pulled" },
  InvalidImageName: { when: "a container's image reference cannot be parsed", todo: "fix `spec.image`" },
  CrashLoopBackOff: { when: "a container exits again and again; the message names it and its last exit code. A container that ran long enough for the kubelet to reset its backoff starts a new count at its exit", todo: `read its logs (\`kubectl logs --previous\`) and fix the program, its configuration or its probes (${podStart})` },
  CreateContainerConfigError: { when: "the kubelet cannot build a container's configuration: a missing Secret or ConfigMap, or a user it cannot verify as non-root", todo: `create what is missing, or set \`runAsUser\` ([Pod Security](#pod-security))` },
  CreateContainerError: { when: "the container runtime cannot create a container", todo: "read the kubelet's message: a bad command, a mount that fails" },
  RunContainerError: { when: "the container runtime cannot start a container", todo: "read the kubelet's message: a command not found, a permission refused" },
} as const;

export const podWaitingReasons = Object.keys(podWaiting) as (keyof typeof podWaiting)[];
export type PodWaitingReason = keyof typeof podWaiting;

type PodEntry = ReasonEntry & { readonly phases: readonly ["progressing", "stalled"] };

/** The pods' reasons as entries: Reconciling, then Stalled once they have lasted the bound. */
function fromThePods<T extends Record<string, { readonly when: string; readonly todo: string }>>(reasons: T): { readonly [R in keyof T]: PodEntry } {
  const entries = {} as { [R in keyof T]: PodEntry };
  for (const [reason, { when, todo }] of Object.entries(reasons)) {
    entries[reason as keyof T] = { phases: ["progressing", "stalled"], from: "the kubelet", when: `${when}. ${podStartBound}`, todo };
  }
  return entries;
}

const fromPods = fromThePods(podWaiting);

export const conditionReasons = {
  Available: {
    phases: ["ready"],
    when: "the spec is applied, every field appstack sets on the live children matches it, nobody else added to their spec, the rollout is complete (after a scale-down, once the extra pods are gone), every other child is Current as kstatus reads it, and each of its Services routes to every ready pod",
    todo: "nothing",
  },
  Applying: { phases: ["progressing"], when: "`pulumi up` runs: a new object, a changed spec, an approved plan, or a new version of the operator's program", todo: "wait; the message says what is applied" },
  RepairingDrift: { phases: ["progressing"], when: "`pulumi up` puts back what someone changed on the children; the message names the fields", todo: `nothing; if it comes back, find who edits the children ([Drift](drift-and-ownership.md#imperative-edits))` },
  DriftDetected: { phases: ["progressing"], when: "the children changed while or right after they were applied; repaired at the next attempt", todo: "nothing; if it comes back, something fights appstack over the children ([Drift](drift-and-ownership.md#ownership))" },
  Creating: { phases: ["progressing"], when: "the Deployment, or another child, does not exist yet; the message names it", todo: "wait" },
  ChildProgressing: {
    phases: ["progressing"],
    when: "a child other than the object's Deployment is not Current as kstatus reads it: InProgress (its controller has not observed its newest spec, a StatefulSet's or a DaemonSet's pods are not all ready and updated, a PersistentVolumeClaim is not Bound, a Job has not started, a custom resource says Reconciling=True or Ready=False), Terminating (being deleted), or Unknown (its status cannot be read); the message names the child and gives kstatus's words",
    todo: "wait; if it stays, look at the child (`kubectl describe`) and its controller ([Children that are not current](runbook.md#children-that-are-not-current))",
  },
  RollingOut: {
    phases: ["progressing"],
    when: "the Deployment rolls out, as `kubectl rollout status` reads it: replicas to update or to become available, old ones terminating, extra ones going after a scale-down",
    todo: "wait; the pods' own reason replaces this one when they cannot start",
  },
  EndpointsPending: {
    phases: ["progressing"],
    when: "the rollout is complete but a Service of the object does not route to every ready pod yet: its EndpointSlices, which the EndpointSlice controller writes, do not list them all (the message names the Service and how many it lists), or changed less than `APPSTACK_PROXY_SYNC_MS` ago, the time kube-proxy may take to apply them ([Configuration](configuration.md))",
    todo: "wait: it goes once the slices list every ready pod and `APPSTACK_PROXY_SYNC_MS` has passed since they last changed. If it stays, check that kube-controller-manager runs (`kubectl get endpointslices -l kubernetes.io/service-name=NAME`)",
  },
  Unschedulable: {
    phases: ["progressing"],
    from: "the scheduler",
    when: "the rollout waits on a pod no node fits, in the scheduler's words (`0/2 nodes are available: 2 Insufficient memory`); it stays Reconciling, since a cluster autoscaler may add a node",
    todo: `add nodes, or lower the requests, or change the affinity or tolerations (${podStart})`,
  },
  ...fromPods,
  StackLocked: {
    phases: ["progressing"],
    when: "another engine holds the stack's lock and is not proven gone: a previous leader's pod that still runs, or a person's `appstack pulumi`; the message names its host, pid, since when and why the lock stays",
    todo: "usually wait; see [StackLocked](runbook.md#stacklocked)",
  },
  DependencyNotReady: {
    phases: ["progressing"],
    when: "a new spec waits for an object of `spec.dependsOn` that is not Ready for its generation, is missing or is being deleted; the message names it and what is held back",
    todo: "make the dependency Ready, or remove it from `spec.dependsOn` ([Dependencies](#dependencies))",
  },
  Deleting: { phases: ["deleting"], when: "the object is deleted and its `pulumi destroy` runs (or, with `deletionPolicy: Orphan` or for a suspended object, its children are left in place and its stack removed)", todo: "wait ([Deletion](#deletion))" },
  AwaitingApproval: {
    phases: ["awaiting"],
    when: "with `updatePolicy: Preview`, a plan waits for a person's approval; Reconciling and Stalled are False: nothing runs and nothing failed. The message names the plan",
    todo: "read the plan and approve it (`kubectl appstack approve`), or change the spec ([Previews](previews.md))",
  },
  Suspended: {
    phases: ["suspended"],
    when: "`spec.suspend: true`: Ready is True while the applied spec is live, its Services route to its ready pods (as `EndpointsPending` says otherwise) and nothing is held back; False while a change or a drift waits for the resume, or while the Services do not route yet",
    todo: "resume (`kubectl appstack resume`) to apply what is held back ([Suspend and resume](#suspend-and-resume))",
  },
  StackUpdateFailed: { phases: ["stalled"], when: "`pulumi up` (or `refresh`) failed; the message is the engine's. Retried with backoff", todo: "fix what the message names, usually in the spec" },
  PreviewFailed: { phases: ["stalled"], when: "with `updatePolicy: Preview`, the preview of a change failed; the message is the engine's. Retried with backoff", todo: "fix what the message names, usually in the spec" },
  OperationTimedOut: {
    phases: ["stalled"],
    when: "a Pulumi operation, or a call to the state folder, passed its deadline (`APPSTACK_OPERATION_TIMEOUT_SECONDS`) and was stopped; the message names what hung",
    todo: "find what hung (a state volume, a backend, an API server); raise the deadline if the operation is only slow ([Configuration](configuration.md))",
  },
  StateUnwritable: { phases: ["stalled"], when: "the state folder is full or read-only, in the file system's own words", todo: "free space on, or remount, the state volume ([StateUnwritable](runbook.md#stateunwritable))" },
  ResourceConflict: {
    phases: ["stalled"],
    when: "a child's name is taken by an object appstack did not create for this one; nothing is written. Retried with backoff until it is gone",
    todo: "delete or rename the other object, or rename this one ([ResourceConflict](runbook.md#resourceconflict))",
  },
  Forbidden: {
    phases: ["stalled"],
    when: "the API server refused a request with 403, in its words: with [tenant identities](#tenant-identities), the object's ServiceAccount may not write a child; otherwise the operator's own rights lack it. Retried with backoff",
    todo: "grant the right to the ServiceAccount in its namespace, or to the operator ([Forbidden](runbook.md#forbidden))",
  },
  ReconcileFailed: { phases: ["stalled"], when: "any other error, such as an API request refused or an API server out of reach; the message starts with its reason. Retried with backoff", todo: "read the message and the operator's log" },
  ProgressDeadlineExceeded: { phases: ["stalled"], from: "the Deployment", when: "the Deployment's progress deadline passed, in its words", todo: `look at the pods (\`kubectl describe\`) (${podStart})` },
  FailedCreate: {
    phases: ["stalled"],
    from: "the Deployment",
    when: "the API server refuses the pods (Pod Security admission, a ResourceQuota, a LimitRange, a webhook): the Deployment's ReplicaFailure condition, in the API server's words, as soon as the Deployment says so",
    todo: `change the spec, or the policy that refuses it ([Pod Security](#pod-security), ${podStart})`,
  },
  ChildFailed: {
    phases: ["stalled"],
    when: "a child other than the object's Deployment is Failed as kstatus reads it: a Job that failed, a Pod whose containers crash-loop or that no node fits, a custom resource that says Stalled=True, a Deployment past its progress deadline; the message names the child and gives kstatus's words. Ready again once the child is current",
    todo: "look at the child (`kubectl describe`) and its controller, and change what it names: the spec, or what the child depends on ([Children that are not current](runbook.md#children-that-are-not-current))",
  },
  DeploymentPaused: { phases: ["stalled"], when: "the Deployment is paused (`spec.paused`) and no repair is under way; a pause is drift, undone by the next repair", todo: "`kubectl rollout resume`, or ask for a reconcile ([Reconcile now](#reconcile-now))" },
  DestroyFailed: {
    phases: ["stalled"],
    when: "a deleted object's `pulumi destroy` failed; the message is the engine's. Retried with backoff",
    todo: "fix what the message names ([Deletion](#deletion), [A stuck finalizer](runbook.md#a-stuck-finalizer))",
  },
  UndeclaredChildKind: {
    phases: ["stalled"],
    when: "the object's kind makes a child of a kind its definition does not declare (`childKinds`): nothing is applied; the message names the kind to declare, and a Warning Event says the same",
    todo: "the kind's author adds the kind of child to its definition's `childKinds` ([Writing a kind](writing-a-kind.md)); the object is reconciled again when its spec changes or the operator restarts",
  },
  KindError: {
    phases: ["stalled"],
    when: "the object's kind threw while making its children from the spec (its definition's `children`); nothing is applied, the message is its error, and a Warning Event says the same. Other kinds' objects are not affected",
    todo: "the kind's author fixes its definition ([Writing a kind](writing-a-kind.md)); a spec the kind handles is tried at once",
  },
  DependencyCycle: { phases: ["stalled"], when: "`spec.dependsOn` makes a cycle; the message names it. Nothing is applied", todo: "remove a `dependsOn` along the cycle ([Dependencies](#dependencies))" },
  NamespaceExcluded: {
    phases: ["stalled"],
    when: "the object is in a namespace the operator never acts in (`APPSTACK_EXCLUDED_NAMESPACES`: `kube-system` and its own by default): no finalizer, no stack, nothing applied",
    todo: "create the object in another namespace ([Configuration](configuration.md))",
  },
} as const satisfies Record<string, ReasonEntry>;

export type ConditionReason = keyof typeof conditionReasons;

/** The reasons a phase of kind `P` may give. */
export type ReasonOf<P extends ReasonPhase> = {
  [R in ConditionReason]: P extends (typeof conditionReasons)[R]["phases"][number] ? R : never;
}[ConditionReason];

/**
 * The reasons of Events that say what was done rather than a state: no condition carries them.
 * An Event may also carry a condition reason (events.ts takes only these two lists).
 */
export const eventReasons = {
  StackUpdated: { type: "Normal", when: "`pulumi up` applied the spec: a new object, a changed spec, a new version of the operator's program; the message says why and what changed" },
  DriftRepaired: { type: "Normal", when: "`pulumi up` put back what someone changed on the children; the message names the fields and what changed" },
  ChangesPending: { type: "Normal", when: "with `updatePolicy: Preview`, a plan waits for approval; the message names it, its changes and the command that approves it" },
  PlanApplied: { type: "Normal", when: "with `updatePolicy: Preview`, an approved plan was applied" },
  ApprovalRefused: { type: "Warning", when: "with `updatePolicy: Preview`, an approval was not carried out (the plan it names is not the one waiting, or no longer matches); the message says why; the approval is removed and a fresh preview written" },
  StackRefreshed: { type: "Normal", when: "with `updatePolicy: Preview`, `pulumi refresh` recorded the cluster again: an interrupted operation had left the stack's record unfinished, or a reconcile was asked for" },
  ForeignResourceDropped: { type: "Warning", when: "an object appstack did not create took the name of a child this object had; it was dropped from the stack's state, and appstack neither changes nor deletes it ([Ownership](drift-and-ownership.md#ownership))" },
  StackDestroyed: { type: "Normal", when: "a deleted object's `pulumi destroy` ended, and its stack was removed" },
  StackForgotten: { type: "Warning", when: "a deleted object's destroy failed again and again while its namespace is terminating: the stack state was removed, and the namespace's deletion removes the children ([Deletion](#deletion))" },
  ChildrenOrphaned: { type: "Normal", when: "a deleted object's children were left in place (`deletionPolicy: Orphan`, or the object was suspended) and its stack removed without a destroy ([Deletion](#deletion))" },
} as const satisfies Record<string, { readonly type: "Normal" | "Warning"; readonly when: string }>;

export type EventReason = keyof typeof eventReasons;
