// Taking a real node apart leaves nothing behind: its containers (found by the node's cgroup), the
// containerd shims (found by the node's containerd socket in their command line), mounts under the
// cluster folder (root filesystems, network namespaces, volumes), cgroups, kube-proxy's iptables
// chains and CNI's cache files. Synchronous, so that it also runs from a process's exit handler.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const cgroupMount = "/sys/fs/cgroup";
const cniResults = "/var/lib/cni/results";
const containerLogLinks = "/var/log/containers";
// The kubelet's device-plugin socket is at a fixed path, whatever its --root-dir.
const devicePluginDir = "/var/lib/kubelet/device-plugins";

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function kill(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

/** Mount points from /proc/self/mountinfo (octal escapes decoded), with their file system type. */
function mounts(): { point: string; type: string }[] {
  const decode = (path: string) => path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8").trim().split("\n").map((line) => {
    const [before, after = ""] = line.split(" - ");
    return { point: decode(before!.split(" ")[4]!), type: after.split(" ")[0]! };
  });
}

/** Every cgroup hierarchy of the machine (each v1 controller, the named systemd one, the unified one). */
function cgroupHierarchies(): string[] {
  return mounts().filter((m) => (m.type === "cgroup" || m.type === "cgroup2") && m.point.startsWith(cgroupMount)).map((m) => m.point);
}

/** The kubelet requires its cgroupRoot to exist in each hierarchy; a new cpuset cgroup needs its CPUs and memory nodes. */
export function createCgroupRoot(cgroupRoot: string): void {
  for (const hierarchy of cgroupHierarchies()) {
    const path = join(hierarchy, cgroupRoot);
    mkdirSync(path, { recursive: true });
    for (const file of ["cpuset.cpus", "cpuset.mems"]) {
      if (existsSync(join(path, file)) && !readFileSync(join(path, file), "utf8").trim()) writeFileSync(join(path, file), readFileSync(join(hierarchy, file)));
    }
  }
}

/** The subfolders of `path`; undefined once it is gone (containerd removes a container's cgroup as it stops, while this walks). */
export function subfolders(path: string): string[] | undefined {
  try {
    return readdirSync(path, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Folders of a cgroup tree, children before parents; one removed while it is walked is left out. */
export function cgroupTree(path: string, list: (path: string) => string[] | undefined = subfolders): string[] {
  const names = list(path);
  if (names === undefined) return [];
  return [...names.flatMap((name) => cgroupTree(join(path, name), list)), path];
}

function processesOf(cgroup: string): number[] {
  try {
    return readFileSync(join(cgroup, "cgroup.procs"), "utf8").split("\n").filter(Boolean).map(Number);
  } catch {
    return []; // Removed meanwhile.
  }
}

function processesIn(cgroupRoot: string): number[] {
  const cgroups = cgroupHierarchies().flatMap((hierarchy) => cgroupTree(join(hierarchy, cgroupRoot)));
  return [...new Set(cgroups.flatMap(processesOf))];
}

/** Kills every process of the node's pods; true once none is left, false at the deadline. */
export function killPodProcesses(cgroupRoot: string, timeoutMs = 10_000): boolean {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = processesIn(cgroupRoot);
    if (pids.length === 0) return true;
    if (Date.now() > deadline) return false;
    for (const pid of pids) kill(pid);
    sleepSync(50);
  }
}

/** Removes the node's cgroups in every hierarchy (only empty ones can go; the rest stay and are reported). */
export function removeCgroups(cgroupRoot: string): string[] {
  const left: string[] = [];
  for (const hierarchy of cgroupHierarchies()) {
    for (const cgroup of cgroupTree(join(hierarchy, cgroupRoot))) {
      try {
        rmdirSync(cgroup);
      } catch {
        left.push(cgroup);
      }
    }
  }
  return left;
}

/** containerd's shims outlive containerd; each names the socket of the containerd that started it. */
export function killShims(containerdSocket: string, timeoutMs = 5_000): void {
  const shims = () => readdirSync("/proc").filter((entry) => /^\d+$/.test(entry)).map(Number).filter((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return args[0]?.includes("containerd-shim") === true && args.includes(containerdSocket);
    } catch {
      return false;
    }
  });
  const deadline = Date.now() + timeoutMs;
  for (let left = shims(); left.length > 0 && Date.now() < deadline; left = shims()) {
    for (const pid of left) kill(pid);
    sleepSync(50);
  }
}

/** Unmounts everything mounted under `dir`, deepest first. */
export function unmountUnder(dir: string): void {
  const points = mounts().map((m) => m.point).filter((point) => point.startsWith(`${dir}/`)).sort((a, b) => b.length - a.length);
  for (const point of points) {
    try {
      execFileSync("umount", ["--lazy", point], { stdio: "ignore", timeout: 10_000 });
    } catch {
      // Already unmounted with its parent.
    }
  }
}

/**
 * The kubelet's and kube-proxy's iptables chains (all named KUBE-*), in both address families: the
 * rules that jump to them from the built-in chains, then the chains. Only one real node runs per
 * machine, so every KUBE-* chain is this node's. (kube-proxy --cleanup leaves the kubelet's.)
 */
export function removeKubeChains(): void {
  for (const family of ["iptables", "ip6tables"]) {
    for (const table of ["filter", "nat", "mangle"]) {
      let saved: string;
      try {
        saved = execFileSync(`${family}-save`, ["-t", table], { encoding: "utf8", timeout: 10_000, stdio: ["ignore", "pipe", "ignore"] });
      } catch {
        continue;
      }
      const lines = saved.split("\n");
      const chains = lines.filter((line) => line.startsWith(":KUBE-")).map((line) => line.slice(1).split(" ")[0]!);
      if (chains.length === 0) continue;
      const jumps = lines.filter((line) => /^-A (?!KUBE-)\S+ .*-j KUBE-/.test(line)).map((line) => `-D${line.slice(2)}`);
      const script = [`*${table}`, ...jumps, ...chains.map((chain) => `-F ${chain}`), ...chains.map((chain) => `-X ${chain}`), "COMMIT", ""].join("\n");
      execFileSync(`${family}-restore`, ["--noflush"], { input: script, timeout: 10_000, stdio: ["pipe", "ignore", "pipe"] });
    }
  }
}

/**
 * CNI's cached results for the node's pod sandboxes (named by network and sandbox id; the sandbox
 * ids are folder names in containerd's state), the kubelet's log links into the cluster folder, and
 * its device-plugin socket.
 */
export function removeNodeFilesOutside(cniNetwork: string, dir: string, sandboxDirs: readonly string[]): void {
  if (existsSync(cniResults)) {
    const sandboxes = sandboxDirs.flatMap((folder) => (existsSync(folder) ? readdirSync(folder) : []));
    const ours = (file: string) => file.startsWith(`${cniNetwork}-`) || sandboxes.some((id) => file.includes(`-${id}-`));
    for (const file of readdirSync(cniResults)) if (ours(file)) rmSync(join(cniResults, file), { force: true });
  }
  const linksHere = (link: string) => {
    try {
      return readlinkSync(join(containerLogLinks, link)).startsWith(`${dir}/`);
    } catch {
      return false; // Not a link.
    }
  };
  if (existsSync(containerLogLinks)) for (const link of readdirSync(containerLogLinks).filter(linksHere)) rmSync(join(containerLogLinks, link), { force: true });
  rmSync(join(devicePluginDir, "kubelet.sock"), { force: true });
  for (const folder of [devicePluginDir, dirname(devicePluginDir)]) {
    try {
      rmdirSync(folder); // Only if empty: anything else there is not ours.
    } catch {
      break;
    }
  }
}
