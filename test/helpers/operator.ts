// Runs the operator as users run it: its own process, against a test cluster, state in a temporary
// folder. The test reads results from the API server, never from the operator.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CustomObjectsApi } from "@kubernetes/client-node";
import yaml from "js-yaml";
import { approveAnnotation, type PreviewStatus, type Workload, type WorkloadKind } from "../../crds/types.ts";
import { installApi } from "../../operator/kube/apply.ts";
import { kubeClients, mergePatch } from "../../operator/kube/clients.ts";
import { orphanedPlugins } from "../../operator/pulumi/orphans.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { freeLoopbackPorts } from "../../toolchain/cluster/ports.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { repoRoot, toolPath } from "../../toolchain/tools.ts";
import { eventually, isNotFound } from "./cluster.ts";
import { httpGet } from "./http.ts";
import { ProcessTreeSampler } from "./proctree.ts";
import { apiVersionOfKind, resourceOf } from "../../components/kinds.ts";

export interface OperatorProcess {
  readonly stateDir: string;
  /** Where /healthz, /readyz and /metrics listen (127.0.0.1). */
  readonly healthPort: number;
  readonly logFile: string;
  readonly child: ChildProcess;
  /** SIGTERM and wait (graceful), or SIGKILL of the whole process group (a crash: the plugins live on). */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
}

function killProcess(pid: number): void {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

// One exit hook for every operator a test file starts (a kill test starts dozens).
const atExit = new Set<() => void>();
process.once("exit", () => {
  for (const cleanUp of atExit) cleanUp();
});

/**
 * `logDir`: where the operator's log goes, when not beside its state (a pod logs to its own stdout).
 * `preload`: modules the operator's Node.js loads first (`--import`). `args`: the operator's flags (`--kinds DIR`). `hostname`: the host it and its engines see (a UTS namespace of its own, as a pod has; its
 * POD_NAME too), so that replicas on this machine take stack locks as replicas in pods do.
 */
export async function startOperatorProcess(kubeconfig: string, options: { stateDir?: string; logDir?: string; env?: Record<string, string>; installApi?: boolean; hostname?: string; preload?: readonly string[]; args?: readonly string[] } = {}): Promise<OperatorProcess> {
  if (options.installApi ?? true) await installApi(kubeClients(kubeconfig));
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), "appstack-operator-"));
  const logFile = join(options.logDir ?? stateDir, `operator-${Date.now()}.log`);
  const healthAddress = options.env?.["APPSTACK_HEALTH_ADDR"] ?? `127.0.0.1:${(await freeLoopbackPorts(1))[0]}`;
  const out = openSync(logFile, "a");
  // `preload`: modules loaded before the operator's own (a kind of the tests registers itself:
  // test/helpers/greeter-kind.ts), after the SDK's trim, which main.ts would load first (preload.ts).
  const preload = options.preload?.length ? [pathToFileURL(join(repoRoot, "operator/cmd/preload.ts")).href, ...options.preload] : [];
  const command = [process.execPath, ...preload.flatMap((module) => ["--import", module]), join(repoRoot, "operator/cmd/main.ts"), ...(options.args ?? [])];
  // unshare and sh exec what follows: the pid stays the operator's.
  const [file, ...args] = options.hostname ? ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', options.hostname, ...command] : command;
  const child = spawn(file!, args, {
    cwd: repoRoot,
    // Its own process group: a crash kills the Pulumi engines it started too, as a pod kill would.
    detached: true,
    stdio: ["ignore", out, out],
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      APPSTACK_STATE_DIR: stateDir,
      APPSTACK_PASSPHRASE: "e2e-passphrase",
      APPSTACK_LOG_LEVEL: "debug",
      APPSTACK_RETRY_BASE_MS: "1000",
      APPSTACK_RETRY_MAX_MS: "10000",
      ...(options.hostname ? { POD_NAME: options.hostname } : {}),
      ...options.env,
      APPSTACK_HEALTH_ADDR: healthAddress,
    },
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killGroup = () => killProcess(-child.pid!);
  // Pulumi starts its plugins in process groups of their own: killed with their engine only by
  // the operator that cleans up after a crash, or here at the end.
  const killAll = () => {
    killGroup();
    for (const plugin of orphanedPlugins(join(stateDir, "pulumi-home"))) killProcess(plugin.pid);
  };
  atExit.add(killAll);
  return {
    stateDir,
    healthPort: Number(healthAddress.split(":").at(-1)),
    logFile,
    child,
    async stop(how = "SIGTERM") {
      // A crash leaves the plugins running, as it would outside a container.
      if (how === "SIGKILL") killGroup();
      else if (child.exitCode === null && child.signalCode === null) child.kill(how);
      await exited;
      if (how === "SIGKILL") return;
      atExit.delete(killAll);
      killAll();
    },
  };
}

/** Stops the operator and removes its state, unless APPSTACK_TEST_LOGS asks to keep it for reading. */
export async function disposeOperator(operator: OperatorProcess | undefined): Promise<void> {
  if (!operator) return;
  await operator.stop();
  if (process.env["APPSTACK_TEST_LOGS"]) console.error(`operator state and logs kept in ${operator.stateDir}`);
  else rmSync(operator.stateDir, { recursive: true, force: true });
}

export class Workloads {
  private readonly api: CustomObjectsApi;

  constructor(kubeconfig: string) {
    this.api = loadKubeConfig(kubeconfig).makeApiClient(CustomObjectsApi);
  }

  /** Creates the object; with `dryRun`, only validates it (a server-side dry run). */
  async create(object: { kind: WorkloadKind; metadata: { name: string; namespace: string }; spec: unknown }, options: { dryRun?: boolean } = {}): Promise<Workload> {
    const body = { apiVersion: apiVersionOfKind(object.kind), ...object };
    return (await this.api.createNamespacedCustomObject({ ...resourceOf(object.kind), namespace: object.metadata.namespace, body, ...(options.dryRun ? { dryRun: "All" } : {}) })) as Workload;
  }

  async get(kind: WorkloadKind, namespace: string, name: string): Promise<Workload> {
    return (await this.api.getNamespacedCustomObject({ ...resourceOf(kind), namespace, name })) as Workload;
  }

  async list(kind: WorkloadKind, namespace: string): Promise<Workload[]> {
    return ((await this.api.listNamespacedCustomObject({ ...resourceOf(kind), namespace })) as { items: Workload[] }).items;
  }

  async mergeSpec(kind: WorkloadKind, namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
    await this.merge(kind, namespace, name, { spec });
  }

  /** A JSON merge patch, as `kubectl patch --type=merge`: metadata and spec in one write. */
  async merge(kind: WorkloadKind, namespace: string, name: string, body: Record<string, unknown>): Promise<void> {
    await this.api.patchNamespacedCustomObject({ ...resourceOf(kind), namespace, name, body }, mergePatch);
  }

  /** What `kubectl scale` does: through the scale subresource. */
  async scale(kind: WorkloadKind, namespace: string, name: string, replicas: number): Promise<void> {
    await this.api.patchNamespacedCustomObjectScale({ ...resourceOf(kind), namespace, name, body: { spec: { replicas } } }, mergePatch);
  }

  async delete(kind: WorkloadKind, namespace: string, name: string): Promise<void> {
    await this.api.deleteNamespacedCustomObject({ ...resourceOf(kind), namespace, name });
  }

  /** Waits until the object's Ready condition is True for its current generation. */
  async ready(kind: WorkloadKind, namespace: string, name: string, timeoutMs = 120_000): Promise<Workload> {
    return eventually(`${kind} ${namespace}/${name} Ready`, async () => {
      const object = await this.get(kind, namespace, name);
      const ready = object.status?.conditions?.find((c) => c.type === "Ready");
      const current = object.status?.observedGeneration === object.metadata.generation;
      return ready?.status === "True" && current ? object : undefined;
    }, timeoutMs);
  }

  /** Ready as `ready`, approving every plan that waits on the way (updatePolicy Preview). */
  async readyApproving(kind: WorkloadKind, namespace: string, name: string, timeoutMs = 120_000): Promise<Workload> {
    return eventually(`${kind} ${namespace}/${name} Ready (approving its plans)`, async () => {
      const object = await this.get(kind, namespace, name);
      const preview = object.status?.preview;
      if (preview && object.metadata.annotations?.[approveAnnotation] !== preview.planId) await this.approve(kind, namespace, name, preview.planId);
      const ready = object.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      return ready && object.status?.observedGeneration === object.metadata.generation ? object : undefined;
    }, timeoutMs);
  }

  /** Waits until the API server no longer has the object (its finalizer has run). */
  async gone(kind: WorkloadKind, namespace: string, name: string, timeoutMs = 120_000): Promise<void> {
    await eventually(`${kind} ${namespace}/${name} to be gone`, async () => {
      try {
        await this.get(kind, namespace, name);
        return undefined;
      } catch (error) {
        return isNotFound(error) ? true : undefined;
      }
    }, timeoutMs);
  }

  /** Waits for a preview of the current generation other than `previous` (by plan id). */
  async previewOf(kind: WorkloadKind, namespace: string, name: string, previous?: string): Promise<{ object: Workload; preview: PreviewStatus }> {
    return eventually(`a new preview of ${kind} ${namespace}/${name}`, async () => {
      const object = await this.get(kind, namespace, name);
      const preview = object.status?.preview;
      // status.observedGeneration stays at the applied generation while a plan waits: the Ready
      // condition speaks for the current one.
      const current = object.status?.conditions?.find((c) => c.type === "Ready")?.observedGeneration === object.metadata.generation;
      return preview && current && preview.planId !== previous && preview.generation === object.metadata.generation ? { object, preview } : undefined;
    });
  }

  /** What `kubectl annotate app NAME appstack.dev/approve=PLAN` does. */
  async approve(kind: WorkloadKind, namespace: string, name: string, planId: string): Promise<void> {
    await this.merge(kind, namespace, name, { metadata: { annotations: { [approveAnnotation]: planId } } });
  }

  async condition(kind: WorkloadKind, namespace: string, name: string, type: string, status: string, timeoutMs = 120_000): Promise<Workload> {
    return eventually(`${kind} ${namespace}/${name} ${type}=${status}`, async () => {
      const object = await this.get(kind, namespace, name);
      return object.status?.conditions?.some((c) => c.type === type && c.status === status) ? object : undefined;
    }, timeoutMs);
  }
}

/** A metric's value in Prometheus text: the first series of `name` whose labels include `labels`. */
export function metricValue(body: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = body.split("\n").find((l) => (l.startsWith(name + " ") || l.startsWith(name + "{")) && wanted.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

export interface CliResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** `appstack preview -f` over `objects`, against a cluster and an operator's stack state. */
export function previewCli(target: { kubeconfig: string; stateDir: string; scratch: string }, objects: object[], ...flags: string[]): CliResult {
  const file = join(target.scratch, `objects-${Date.now()}.yaml`);
  writeFileSync(file, objects.map((object) => yaml.dump(object)).join("---\n"));
  const result = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "operator/cmd/cli.ts"), "preview", "-f", file, ...flags], {
    cwd: repoRoot,
    encoding: "utf8",
    env: { ...process.env, KUBECONFIG: target.kubeconfig, APPSTACK_STATE_DIR: target.stateDir, APPSTACK_PASSPHRASE: "e2e-passphrase" },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * `appstack <args>` as `npx appstack` runs it, against a cluster; stdin is no terminal; ended
 * after 3 minutes. Not spawnSync: this process must go on reading the output of the operator it
 * started, or the operator blocks on its full pipe and answers nothing.
 */
export function appstackCli(kubeconfig: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", join(repoRoot, "operator/cmd/cli.ts"), ...args], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, KUBECONFIG: kubeconfig }, timeout: 180_000 }, (error, stdout, stderr) => {
      resolve({ status: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr });
    }).stdin?.end();
  });
}

/** `kubectl appstack <args>` (the pinned kubectl, the plugin in `pluginBin` first on PATH) against a cluster; stdin is no terminal. */
export function kubectlAppstack(target: { kubeconfig: string; pluginBin: string }, ...args: string[]): CliResult {
  const env = { ...process.env, PATH: `${target.pluginBin}:${process.env["PATH"] ?? ""}`, KUBECONFIG: target.kubeconfig };
  const result = spawnSync(toolPath("kubectl"), ["appstack", ...args], { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"], timeout: 180_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface QuietPeriod {
  /** Pulumi CLI processes the operator started meanwhile, seen in /proc every 20 ms (each lives far longer). */
  readonly pulumiProcesses: number;
  /** Reconciles that ran meanwhile (appstack_reconcile_total, every kind and result). */
  readonly reconciles: number;
  readonly resyncs: number;
  /** Pulumi operations the operator counted meanwhile. */
  readonly operations: number;
}

/** The sum of every series of a counter in Prometheus text. */
export function counterTotal(body: string, name: string): number {
  return body.split("\n").filter((l) => l.startsWith(name + " ") || l.startsWith(name + "{")).reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/**
 * Until a just-started operator has been through every object once: ready (leading, caches synced,
 * so every object is queued), at least `objects` reconciles, and nothing queued or running. Before
 * that, an object's status is the one an earlier operator wrote, which says nothing about what
 * changed while no operator ran.
 */
export async function firstPassDone(operator: OperatorProcess, objects: number, timeoutMs = 180_000): Promise<void> {
  await eventually("the operator's first pass over every object", async () => {
    if ((await httpGet(`http://127.0.0.1:${operator.healthPort}/readyz`)).status !== 200) return undefined;
    const metrics = (await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`)).body;
    const idle = metricValue(metrics, "appstack_queue_depth") === 0 && metricValue(metrics, "appstack_queue_active") === 0;
    return idle && counterTotal(metrics, "appstack_reconcile_total") >= objects ? true : undefined;
  }, timeoutMs);
}

/** Runs `work` while counting what the operator did: reconciles, resyncs, and every Pulumi process it started. */
export async function watchOperator(operator: OperatorProcess, work: () => Promise<void>): Promise<QuietPeriod> {
  const sampler = new ProcessTreeSampler(operator.child.pid!);
  const before = (await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`)).body;
  sampler.start(20);
  try {
    await work();
  } finally {
    sampler.stop();
  }
  const after = (await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`)).body;
  const delta = (name: string) => counterTotal(after, name) - counterTotal(before, name);
  return { pulumiProcesses: sampler.pulumiProcesses, reconciles: delta("appstack_reconcile_total"), resyncs: delta("appstack_resync_total"), operations: delta("appstack_pulumi_operations_total") };
}

/** Every lock file of an operator's file backend. */
export function lockFiles(stateDir: string): string[] {
  const root = join(stateDir, "backend", ".pulumi", "locks");
  if (!existsSync(root)) return [];
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(root);
  return files;
}

/** Where an operator's file backend keeps the checkpoint of an object's stack. */
export function checkpointPath(stateDir: string, kind: WorkloadKind, namespace: string, name: string): string {
  return join(stateDir, "backend", ".pulumi", "stacks", "appstack", `${stackName(kind, namespace, name)}.json`);
}

/** Where an operator's file backend keeps the history of an object's stack: Pulumi's own record of its updates. */
export function stackHistoryFolder(stateDir: string, kind: WorkloadKind, namespace: string, name: string): string {
  return join(stateDir, "backend", ".pulumi", "history", "appstack", stackName(kind, namespace, name));
}

/** The entries of an object's stack history, one per update, refresh or destroy the engine ran. */
export function stackHistoryEntries(stateDir: string, kind: WorkloadKind, namespace: string, name: string): string[] {
  const folder = stackHistoryFolder(stateDir, kind, namespace, name);
  return existsSync(folder) ? readdirSync(folder).filter((file) => file.endsWith(".history.json")) : [];
}

/** The pending operations an interrupted engine left in an object's stack (`type` and URN each). */
export function pendingOperations(stateDir: string, kind: WorkloadKind, namespace: string, name: string): string[] {
  const file = JSON.parse(readFileSync(checkpointPath(stateDir, kind, namespace, name), "utf8")) as { checkpoint: { latest?: { pending_operations?: { type: string; resource: { urn: string } }[] } } };
  return (file.checkpoint.latest?.pending_operations ?? []).map((operation) => `${operation.type} ${operation.resource.urn}`);
}
