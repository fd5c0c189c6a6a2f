// What the image and real-node work needs from the machine itself: root and a few of Debian's
// packages (buildah and mmdebstrap for the images; containerd, runc, iptables, iproute2, the CNI
// plugins and busybox-static for a real node). They are not Go modules, so the toolchain cannot
// build them; where the tests that need them must run (CI=true, or APPSTACK_REAL_NODE_TESTS=1),
// the toolchain step installs the missing ones with apt-get, so that a fresh machine's CI run brings
// everything it needs, as it brings the npm packages and the Go modules.
import { execFileSync, type ExecFileSyncOptions } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { busyboxBinary } from "./cluster/node-images.ts";
import { findOnPath } from "./tools.ts";

/** What a piece of work needs: the images only (buildah), or a real node as well (containerd, the kubelet's helpers). */
export type HostNeeds = "images" | "node" | "images and node";

export interface HostPrerequisite {
  readonly what: string;
  readonly debianPackage: string;
  readonly present: () => boolean;
}

const cniPlugins = "/usr/lib/cni";

const command = (name: string, debianPackage: string): HostPrerequisite => ({ what: name, debianPackage, present: () => findOnPath(name) !== undefined });

const imagePrerequisites: readonly HostPrerequisite[] = [command("buildah", "buildah"), command("mmdebstrap", "mmdebstrap"), command("runc", "runc")];

const nodePrerequisites: readonly HostPrerequisite[] = [
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

export function hostPrerequisites(needs: HostNeeds): readonly HostPrerequisite[] {
  if (needs === "images") return imagePrerequisites;
  if (needs === "node") return nodePrerequisites;
  // runc is in both lists: named once.
  return [...imagePrerequisites, ...nodePrerequisites.filter((prerequisite) => !imagePrerequisites.some((image) => image.what === prerequisite.what))];
}

/** The prerequisites this machine lacks, and the Debian packages that bring them (each named once). */
export function missingHostPrerequisites(needs: HostNeeds): { readonly missing: readonly HostPrerequisite[]; readonly packages: readonly string[] } {
  const missing = hostPrerequisites(needs).filter((prerequisite) => !prerequisite.present());
  return { missing, packages: [...new Set(missing.map((prerequisite) => prerequisite.debianPackage))] };
}

/** Whether the files that build images and start a real node must run here rather than skip. */
export function realNodeTestsRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env["APPSTACK_REAL_NODE_TESTS"] === "1" || (env["CI"] === "true" && env["APPSTACK_REAL_NODE_TESTS"] !== "0");
}

// apt-get's own network timeouts bound each download; these bound the whole step, so that a stuck
// mirror or a held dpkg lock fails the run with a message instead of hanging it.
const aptUpdateTimeoutMs = 10 * 60_000;
const aptInstallTimeoutMs = 20 * 60_000;

/**
 * Under CI (or APPSTACK_REAL_NODE_TESTS=1), as root with apt-get: installs the Debian packages that
 * the image and real-node tests need and this machine lacks. Elsewhere it changes nothing (those
 * files then skip and name the `apt-get install` line). Returns the packages it installed. env is
 * read for that decision only; apt-get runs in this process's environment.
 */
export function installHostPackages(log: (line: string) => void, env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.()): readonly string[] {
  if (!realNodeTestsRequired(env) || uid !== 0 || findOnPath("apt-get") === undefined) return [];
  const { packages } = missingHostPrerequisites("images and node");
  if (packages.length === 0) return [];
  log(`host packages: installing Debian's ${packages.join(" ")} (the image and real-node tests need them)...`);
  const started = Date.now();
  // apt's progress is noise in a test run; its errors go to stderr.
  const options: ExecFileSyncOptions = { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, stdio: ["ignore", "ignore", "inherit"] };
  execFileSync("apt-get", ["update", "-q"], { ...options, timeout: aptUpdateTimeoutMs });
  execFileSync("apt-get", ["install", "-y", "-q", "--no-install-recommends", ...packages], { ...options, timeout: aptInstallTimeoutMs });
  const still = missingHostPrerequisites("images and node").missing;
  if (still.length > 0) throw new Error(`host packages: still missing after apt-get install: ${still.map((prerequisite) => prerequisite.what).join(", ")}`);
  log(`host packages: installed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return packages;
}
