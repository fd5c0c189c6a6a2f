// The main job as a newcomer runs it: `npm start -- --samples` in a terminal (its own process
// group, so a Ctrl-C reaches npm and the operator at once, as a terminal's does), kubectl in
// another with the lines it prints, Ctrl-C; then `npm start` again in the terminal that still
// exports the first run's KUBECONFIG, stopped with two Ctrl-Cs. Each run has a new local cluster,
// and nothing of it may be left once it has stopped. The second Ctrl-C goes to a job that is
// provably still stopping: the write that hands its lease back is held in admission, so the
// graceful stop waits there (a job that stops quickly would already be gone, and the second
// Ctrl-C would race it). An operation in flight is no such hold: the terminal's Ctrl-C reaches
// the Pulumi engines in the job's process group too, and they cancel it at once.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { sameSignalMs } from "../../operator/manager/signals.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { eventually } from "../helpers/cluster.ts";
import { holdWrites, type Hold } from "../helpers/hold.ts";
import { Workloads } from "../helpers/operator.ts";
import { processesMentioning } from "../helpers/proctree.ts";

// The default state folder of a user who names none: shared by both runs, as ~/.local/state would be.
const home = mkdtempSync(join(tmpdir(), "appstack-main-job-"));
after(() => rmSync(home, { recursive: true, force: true }));

/** The export lines the main job printed for a second terminal. */
function shellExports(printed: string): string {
  return printed.split("\n").filter((line) => /^\s+export (KUBECONFIG|PATH|APPSTACK_STATE_DIR|APPSTACK_BACKEND_URL)=/.test(line)).join("\n");
}

/** The second terminal, on a PATH with no kubectl of its own: the printed exports, then a command. */
function shell(printed: string, command: string): string {
  return execFileSync("bash", ["-c", `${shellExports(printed)}\n${command}`], { encoding: "utf8", env: { ...process.env, PATH: "/usr/bin:/bin", KUBECACHEDIR: join(home, "kube-cache") } });
}

interface Run {
  readonly output: () => string;
  /** A Ctrl-C in the terminal: SIGINT to the whole foreground process group. */
  readonly ctrlC: () => void;
  /** npm's exit: its code (null when a signal ended it), and what the job had printed by then. */
  readonly exited: Promise<{ code: number | null; printed: string }>;
}

function startMainJob(kubeconfig?: string, flags: string[] = [], settings: Record<string, string> = {}): Run {
  const env: Record<string, string | undefined> = { ...process.env, XDG_STATE_HOME: home, APPSTACK_HEALTH_ADDR: "127.0.0.1:0", APPSTACK_LOG_FORMAT: "json", KUBECONFIG: kubeconfig, ...settings };
  if (!kubeconfig) delete env["KUBECONFIG"];
  delete env["APPSTACK_STATE_DIR"];
  // Its own process group, as a shell gives a foreground job.
  const child = spawn("npm", ["start", "--", "--samples", ...flags], { cwd: repoRoot, env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  let output = "";
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return {
    output: () => output,
    ctrlC: () => process.kill(-child.pid!, "SIGINT"),
    exited: new Promise((resolve) => child.once("exit", (code) => resolve({ code, printed: output }))),
  };
}

async function samplesReady(run: Run): Promise<string> {
  const kubeconfig = await eventually("the local cluster", async () => /export KUBECONFIG=(\S+)/.exec(run.output())?.[1], 120_000);
  const workloads = new Workloads(kubeconfig);
  const hello = await workloads.ready("App", "default", "hello");
  const cache = await workloads.ready("Memcached", "default", "cache");
  assert.equal(hello.status?.readyReplicas, 2);
  assert.equal(cache.status?.readyReplicas, 3);
  return kubeconfig;
}

/** Resolves once `ms` have passed since `from` (performance.now()); a timer alone may fire early by the loop's cached time. */
async function past(from: number, ms: number): Promise<void> {
  for (let left = ms; left > 0; left = from + ms - performance.now()) await sleep(left);
}

async function assertNothingLeft(kubeconfig: string): Promise<void> {
  const clusterFolder = dirname(kubeconfig);
  assert.ok(!existsSync(clusterFolder), `${clusterFolder} is removed`);
  // A SIGKILLed process may still be in /proc for a moment before init reaps it.
  await eventually("no process of the local cluster left", async () => processesMentioning(clusterFolder).length === 0 || undefined, 10_000);
}

test("the main job with --samples, as a newcomer runs it twice: kubectl and kubectl appstack from the printed lines, Ctrl-C, a stale KUBECONFIG", async () => {
  const first = startMainJob();
  let kubeconfig: string;
  try {
    kubeconfig = await samplesReady(first);
    // The pinned kubectl, from the printed PATH line, on a PATH that has no other.
    const apps = shell(first.output(), "kubectl get apps");
    assert.match(apps, /^NAME\s+IMAGE\s+DESIRED\s+READY\s+STATUS\s+PLAN\s+AGE\n/, apps);
    assert.match(apps, /^hello\s+nginx:1.27\s+2\s+2\s+Available\s+\S+/m, apps);
    const explained = shell(first.output(), "kubectl explain app.spec.replicas; kubectl explain memcached.status.conditions.reason");
    assert.match(explained, /Number of pods \(kubectl scale changes it\)/);
    assert.match(explained, /Why, in one CamelCase word/);
    // The kubectl plugin from the printed PATH, verbatim: what the operator did to the sample, and why.
    const history = shell(first.output(), "kubectl appstack history app/hello");
    assert.match(history, /^TIME\s+OPERATION\s+GENERATION\s+WHY\s+CHANGES\n\S+\s+update succeeded\s+1\s+created\s+create \d+/, history);
    assert.match(shell(first.output(), "kubectl appstack status"), /^app\/hello\s+True\s/m);
    // A preview in that terminal compares with this operator's own stacks: the samples are applied.
    const preview = spawnSync("bash", ["-c", `${shellExports(first.output())}\nnpx appstack preview -f crds/samples/app.yaml -f crds/samples/memcached.yaml --json`], { cwd: repoRoot, encoding: "utf8" });
    assert.equal(preview.status, 0, preview.stderr);
    assert.deepEqual((JSON.parse(preview.stdout) as { objects: { new: boolean }[] }).objects.map((o) => o.new), [false, false]);
  } catch (error) {
    console.error(first.output().split("\n").slice(-40).join("\n"));
    first.ctrlC();
    throw error;
  }
  first.ctrlC();
  // npm ends by the SIGINT it forwarded (code null), but only once the job it ran has finished:
  // the prompt comes back with everything stopped.
  const { code, printed } = await first.exited;
  assert.ok(code === 0 || code === null, printed.split("\n").slice(-20).join("\n"));
  // The terminal's Ctrl-C reached the operator, not the API server: the operator stopped first and
  // could still hand its lease back, then the cluster went. The copies of that one Ctrl-C that
  // npm forwards are not a second one.
  assert.match(printed, /released the lease/);
  assert.match(printed, /local cluster stopped and removed/);
  assert.doesNotMatch(printed, /second signal/);
  await assertNothingLeft(kubeconfig);

  // The same terminal still exports the first run's kubeconfig. This time the stacks are kept in a
  // PostgreSQL server beside the local cluster (docs/state-backends.md).
  const second = startMainJob(kubeconfig, ["--backend", "postgres"]);
  let release: Hold;
  try {
    const fresh = await samplesReady(second);
    assert.notEqual(fresh, kubeconfig);
    assert.match(second.output(), /which has stopped; starting a new local cluster/);
    assert.match(second.output(), /postgres:\/\/appstack:\*\*\*@127\.0\.0\.1/);
    kubeconfig = fresh;
    // The printed lines name the database (from a file: the password is never printed) for the plugin.
    assert.match(shell(second.output(), "kubectl appstack history app/hello"), /update succeeded\s+1\s+created/);
    assert.ok(!second.output().includes(new URL(readFileSync(join(dirname(kubeconfig), "postgres-url"), "utf8")).password), "the main job printed the database's password");
    // The graceful stop's last write to the API server: the lease handed back (its holder cleared),
    // held until the API server gives up on the webhook; the renewals pass.
    release = await holdWrites({ kubeconfig, dir: dirname(kubeconfig) }, "leases", "UPDATE", "default", "appstack-operator", undefined, (request) => !request.object?.spec?.["holderIdentity"]);
  } catch (error) {
    console.error(second.output().split("\n").slice(-40).join("\n"));
    second.ctrlC();
    throw error;
  }
  // Two Ctrl-Cs, as a person presses them: the first starts the graceful stop, which waits at the
  // held release; the second stops at once.
  second.ctrlC();
  await release.held;
  // The job took the first Ctrl-C before its release reached the webhook. A signal within
  // sameSignalMs of its first is a copy of that keypress (signals.ts), so the second comes later
  // than that, counted from here: a lower bound, not a guess.
  await past(performance.now(), sameSignalMs);
  assert.doesNotMatch(second.output(), /released the lease|could not release the lease/, "the release was held");
  second.ctrlC();
  const stopped = await second.exited;
  const tail = stopped.printed.split("\n").slice(-20).join("\n");
  assert.notEqual(stopped.code, 0, tail);
  assert.match(stopped.printed, /stopping: letting running operations finish/, tail);
  assert.match(stopped.printed, /second signal: stopping at once/, tail);
  // It was still stopping when the second Ctrl-C came: the release never went through.
  assert.doesNotMatch(stopped.printed, /released the lease|could not release the lease/, tail);
  await assertNothingLeft(kubeconfig);
});

test("the main job with tenant identities (APPSTACK_DEFAULT_SERVICE_ACCOUNT=deployer): the local cluster's kubeconfig names its key files, and the samples are written as default's deployer once it may", async () => {
  const run = startMainJob(undefined, [], { APPSTACK_DEFAULT_SERVICE_ACCOUNT: "deployer", APPSTACK_RETRY_BASE_MS: "1000", APPSTACK_RETRY_MAX_MS: "3000" });
  let kubeconfig: string | undefined;
  try {
    kubeconfig = await eventually("the local cluster", async () => /export KUBECONFIG=(\S+)/.exec(run.output())?.[1], 120_000);
    const workloads = new Workloads(kubeconfig);
    // Written as the deployer, which may do nothing yet: the API server's 403 names it.
    const refused = await workloads.condition("App", "default", "hello", "Stalled", "True");
    assert.match(refused.status?.conditions?.find((c) => c.type === "Stalled")?.message ?? "", /system:serviceaccount:default:deployer/);
    const grant = [
      "kubectl create serviceaccount deployer",
      "kubectl create role deployer --verb=get,list,watch,create,update,patch,delete --resource=deployments.apps,services",
      "kubectl create rolebinding deployer --role=deployer --serviceaccount=default:deployer",
    ];
    shell(run.output(), grant.join("\n"));
    await samplesReady(run);
  } catch (error) {
    console.error(run.output().split("\n").slice(-40).join("\n"));
    throw error;
  } finally {
    run.ctrlC();
  }
  const { printed } = await run.exited;
  assert.match(printed, /local cluster stopped and removed/);
  if (kubeconfig) await assertNothingLeft(kubeconfig);
});

test("the main job refuses a kubeconfig that does not exist and is not one of its own clusters", () => {
  const result = (() => {
    try {
      execFileSync(process.execPath, ["--import", "tsx", join(repoRoot, "operator/cmd/cli.ts"), "run", "--kubeconfig", join(home, "nowhere")], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      return "";
    } catch (error) {
      return String((error as { stderr?: string }).stderr);
    }
  })();
  assert.match(result, /the kubeconfig .*nowhere does not exist: name an existing one, or `unset KUBECONFIG`/);
});
