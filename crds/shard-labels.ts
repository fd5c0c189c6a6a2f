// Which replica reconciles an object is said by its labels shard.appstack.dev/* (docs/sharding.md):
// the leader's sharder sets the owner and the drain, the owner removes both to confirm a drain.
// Anyone else's change of them breaks that hand-over: a `kubectl replace` of a manifest without
// them, or Argo CD's Replace=true, during a drain strips them, and the sharder then hands the object
// on while its old owner still works on it. The stack lock stops a second engine, but status and
// child writes of the two replicas interleave. This policy leaves those labels to the operator's own
// user: anyone else's create with one, and update that adds, changes or removes one, is refused.
// Every other change (a replace that keeps them, any other label) goes through.
import { operatorExemptPolicy, type GroupResources } from "./operator-exempt-policy.ts";

export const shardLabelsPolicyName = "appstack.dev-shard-labels";
export const shardLabelPrefix = "shard.appstack.dev/";

const labels = (object: string) => `${object} != null && has(${object}.metadata.labels) ? ${object}.metadata.labels : {}`;
const isShard = (key: string) => `${key}.startsWith('${shardLabelPrefix}')`;

/** The policy and its binding (operator-exempt-policy.ts) for the operator's users, over every kind's resource (`resources`, by group). */
export function shardLabelsPolicy(operatorUsers: readonly string[], resources: readonly GroupResources[]) {
  return operatorExemptPolicy(shardLabelsPolicyName, operatorUsers, resources, [
    { name: "labels", expression: labels("object") },
    { name: "oldLabels", expression: labels("oldObject") },
    // Added or changed, then removed.
    {
      name: "changed",
      expression: `variables.labels.filter(k, ${isShard("k")} && !(k in variables.oldLabels && variables.oldLabels[k] == variables.labels[k])) + ` +
        `variables.oldLabels.filter(k, ${isShard("k")} && !(k in variables.labels))`,
    },
  ], [
    {
      expression: "variables.changed.size() == 0",
      message: `the labels ${shardLabelPrefix}* say which appstack replica reconciles this object: only the appstack operator sets, changes or removes them; keep them as they are (kubectl apply or patch rather than replace)`,
      messageExpression:
        `'the labels ' + variables.changed.join(', ') + ' say which appstack replica reconciles this object: only the appstack operator sets, changes or removes them; ` +
        `keep them as they are (kubectl apply or patch rather than replace)'`,
      reason: "Forbidden",
    },
  ]);
}
