// Whether the files that build images and start a real node run here. They are part of
// `npm test`: they run as root with Debian's packages in place, and otherwise skip and name what
// is missing. Under CI (CI=true), or when asked for with APPSTACK_REAL_NODE_TESTS=1, a missing
// prerequisite fails the file instead: a CI run must not pass without them.
// APPSTACK_REAL_NODE_TESTS=0 skips them (a quick local run).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { busyboxBinary } from "../../toolchain/cluster/node-images.ts";
import { findOnPath } from "../../toolchain/tools.ts";

/** What a file needs: the images only (buildah), or a real node as well (containerd, the kubelet's helpers). */
export type RealNodeNeeds = "images" | "node" | "images and node";

interface Prerequisite {
  readonly what: string;
  readonly debianPackage: string;
  readonly present: () => boolean;
}

const cniPlugins = "/usr/lib/cni";

const command = (name: string, debianPackage: string): Prerequisite => ({ what: name, debianPackage, present: () => findOnPath(name) !== undefined });

const imagePrerequisites: readonly Prerequisite[] = [command("buildah", "buildah"), command("mmdebstrap", "mmdebstrap"), command("runc", "runc")];

const nodePrerequisites: readonly Prerequisite[] = [
  command("containerd", "containerd"),
  command("ctr", "containerd"),
  command("runc", "runc"),
  command("iptables", "iptables"),
  command("ip", "iproute2"),
  ...["bridge", "host-local", "loopback"].map((plugin) => ({
    what: join(cniPlugins, plugin),
    debianPackage: "containernetworking-plugins",
    present: () => existsSync(join(cniPlugins, plugin)),
  })),
  { what: busyboxBinary, debianPackage: "busybox-static", present: () => existsSync(busyboxBinary) },
];

function prerequisites(needs: RealNodeNeeds): readonly Prerequisite[] {
  if (needs === "images") return imagePrerequisites;
  if (needs === "node") return nodePrerequisites;
  // runc is in both lists: named once.
  return [...imagePrerequisites, ...nodePrerequisites.filter((prerequisite) => !imagePrerequisites.some((image) => image.what === prerequisite.what))];
}

/** Why this machine cannot run such a file, or undefined when it can. */
export function missingForRealNode(needs: RealNodeNeeds, uid = process.getuid?.()): string | undefined {
  const missing = prerequisites(needs).filter((prerequisite) => !prerequisite.present());
  const reasons: string[] = [];
  if (uid !== 0) reasons.push("root (the kubelet, containerd and buildah need it)");
  if (missing.length > 0) {
    const packages = [...new Set(missing.map((prerequisite) => prerequisite.debianPackage))];
    reasons.push(`${missing.map((prerequisite) => prerequisite.what).join(", ")} (apt-get install ${packages.join(" ")})`);
  }
  return reasons.length === 0 ? undefined : `needs ${reasons.join("; and ")}`;
}

/**
 * The `skip` option of such a file's tests: false when they run, else why not. Throws when they
 * must run (CI, or APPSTACK_REAL_NODE_TESTS=1) and cannot, so that the file fails and says why.
 */
export function realNodeSkip(needs: RealNodeNeeds, env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.()): false | string {
  const setting = env["APPSTACK_REAL_NODE_TESTS"];
  if (setting === "0") return "APPSTACK_REAL_NODE_TESTS=0 skips the files that build images and start a real node";
  const missing = missingForRealNode(needs, uid);
  if (missing === undefined) return false;
  const required = setting === "1" || env["CI"] === "true";
  if (required) throw new Error(`this file ${missing}; under CI (or APPSTACK_REAL_NODE_TESTS=1) it must run, so it fails rather than skips`);
  return `${missing}; skipped (CI runs it)`;
}
