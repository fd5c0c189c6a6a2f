// Whether the files that build images and start a real node run here. They are part of
// `npm test`: they run as root with Debian's packages in place, and otherwise skip and name what
// is missing. Under CI (CI=true), or when asked for with APPSTACK_REAL_NODE_TESTS=1, a missing
// prerequisite fails the file instead: a CI run must not pass without them (and there `npm test`'s
// toolchain step installs them first: toolchain/host-packages.ts).
// APPSTACK_REAL_NODE_TESTS=0 skips them (a quick local run).
import { missingHostPrerequisites, realNodeTestsRequired, type HostNeeds } from "../../toolchain/host-packages.ts";

/** What a file needs: the images only (buildah), or a real node as well (containerd, the kubelet's helpers). */
export type RealNodeNeeds = HostNeeds;

/** Why this machine cannot run such a file, or undefined when it can. */
export function missingForRealNode(needs: RealNodeNeeds, uid = process.getuid?.()): string | undefined {
  const { missing, packages } = missingHostPrerequisites(needs);
  const reasons: string[] = [];
  if (uid !== 0) reasons.push("root (the kubelet, containerd and buildah need it)");
  if (missing.length > 0) reasons.push(`${missing.map((prerequisite) => prerequisite.what).join(", ")} (apt-get install ${packages.join(" ")})`);
  return reasons.length === 0 ? undefined : `needs ${reasons.join("; and ")}`;
}

/**
 * The `skip` option of such a file's tests: false when they run, else why not. Throws when they
 * must run (CI, or APPSTACK_REAL_NODE_TESTS=1) and cannot, so that the file fails and says why.
 */
export function realNodeSkip(needs: RealNodeNeeds, env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.()): false | string {
  if (env["APPSTACK_REAL_NODE_TESTS"] === "0") return "APPSTACK_REAL_NODE_TESTS=0 skips the files that build images and start a real node";
  const missing = missingForRealNode(needs, uid);
  if (missing === undefined) return false;
  if (realNodeTestsRequired(env)) throw new Error(`this file ${missing}; under CI (or APPSTACK_REAL_NODE_TESTS=1) it must run, so it fails rather than skips`);
  return `${missing}; skipped (CI runs it)`;
}
