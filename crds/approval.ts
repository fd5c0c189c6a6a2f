// Approving a plan is writing the annotation appstack.dev/approve (types.ts), a patch: without this
// policy whoever may edit an App may also approve its plans, so the author of a change could wave
// it through alone. The policy makes approving a right of its own, the custom RBAC verb `approve`
// on the kind's resource (apps, memcacheds), which a Role grants like any verb: a create or update
// that sets the annotation, or changes its value, is refused unless the API server's authorizer
// says the requester may `approve` that object. Removing it is not approving (the operator removes
// it once used, controller/approval.ts; a person may withdraw one), and the operator's own user is
// never checked.
import { operatorExemptPolicy, type GroupResources } from "./operator-exempt-policy.ts";
import { approveAnnotation } from "./types.ts";

export const approvalPolicyName = "appstack.dev-approve";

/** What a person needs to approve a plan of `plural` in `group`, as the policy and `kubectl appstack approve` say it. */
export function approvalRights(plural: string, group: string, verbs: readonly string[] = ["approve"]): string {
  const named = verbs.length > 1 ? `verbs ${verbs.join(" and ")}` : `verb ${verbs.join("")}`;
  return `approving needs the RBAC ${named} on ${plural}.${group}: a Role rule {apiGroups: [${group}], resources: [${plural}], verbs: [${verbs.join(", ")}]}`;
}

const annotations = (object: string) => `${object} != null && has(${object}.metadata.annotations) ? ${object}.metadata.annotations : {}`;
const key = `'${approveAnnotation}'`;
/** The resource and its group as the request names them (apps, appstack.dev), spliced into the CEL string of the message. */
const requestedPlural = "' + request.resource.resource + '";
const requestedGroup = "' + request.resource.group + '";
const refusal = `setting ${approveAnnotation} approves a plan; `;

/**
 * The policy and its binding (operator-exempt-policy.ts) for the operator's users, over every
 * kind's resource (`resources`, by group; the first named in the fallback message). With one group
 * (App and Memcached alone) the authorizer is asked of it by name; with more, of the request's.
 */
export function approvalPolicy(operatorUsers: readonly string[], resources: readonly GroupResources[]) {
  const [firstGroup] = resources;
  const group = firstGroup?.group ?? "";
  const [first, ...others] = firstGroup?.plurals ?? [];
  const otherPlurals = [...others, ...resources.slice(1).flatMap((other) => other.plurals.map((plural) => `${plural}.${other.group}`))];
  const alsoFor = otherPlurals.length ? ` (${otherPlurals.join(", ")} for the other kinds)` : "";
  const oneGroup = resources.length <= 1;
  const checkedGroup = oneGroup ? `'${group}'` : "request.resource.group";
  return operatorExemptPolicy(approvalPolicyName, operatorUsers, resources, [
    { name: "annotations", expression: annotations("object") },
    { name: "oldAnnotations", expression: annotations("oldObject") },
    // Set where it was not, or set to another plan id; not a removal, not a write that keeps it.
    {
      name: "approves",
      expression: `${key} in variables.annotations && !(${key} in variables.oldAnnotations && variables.oldAnnotations[${key}] == variables.annotations[${key}])`,
    },
  ], [
    {
      // Only an approval asks the authorizer: every other write is left to RBAC's patch and update.
      expression: `!variables.approves || authorizer.group(${checkedGroup}).resource(request.resource.resource).namespace(request.namespace).name(request.name).check('approve').allowed()`,
      message: `${refusal}${approvalRights(first ?? "", group)}${alsoFor}`,
      messageExpression: `request.userInfo.username + ' may not approve: ${refusal}${approvalRights(requestedPlural, oneGroup ? group : requestedGroup)}'`,
      reason: "Forbidden",
    },
  ]);
}
