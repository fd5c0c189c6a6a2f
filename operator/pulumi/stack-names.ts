import { createHash } from "node:crypto";
import type { WorkloadKind } from "../../crds/types.ts";

/** The Pulumi project every object's stack belongs to. */
export const projectName = "appstack";

const maxStackName = 100;

/**
 * The stack of one object. Namespaces are DNS labels and cannot contain a dot, so
 * `<kind>.<namespace>.<name>` never collides between namespaces; names too long for Pulumi keep a
 * readable prefix and end in a digest of the whole.
 */
export function stackName(kind: WorkloadKind, namespace: string, name: string): string {
  const full = `${kind.toLowerCase()}.${namespace}.${name}`;
  if (full.length <= maxStackName) return full;
  const digest = createHash("sha256").update(full).digest("hex").slice(0, 16);
  return `${full.slice(0, maxStackName - digest.length - 1)}-${digest}`;
}
