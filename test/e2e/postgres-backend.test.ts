// The stacks on a real PostgreSQL server through Pulumi's own `postgres://` DIY backend: one
// local cluster and one server (toolchain/cluster/postgres.ts) for the file. What the operator
// reads and repairs in the backend directly (state-store.ts: locks, checkpoints, history) works
// there as on files. Results come from the API server, and from Pulumi's table itself.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import pg from "pg";
import type { HistoryRow } from "../../operator/cmd/history-cli.ts";
import { certificateAuthority, servingCertificate } from "../../toolchain/cluster/pki.ts";
import { startPostgres, type PostgresServer } from "../../toolchain/cluster/postgres.ts";
import { cacheRoot, repoRoot } from "../../toolchain/tools.ts";
import { eventsOf, eventually, orUndefined, useCluster } from "../helpers/cluster.ts";
import { holdWrites } from "../helpers/hold.ts";
import { assertServicesDropped, assertUsersService, takeServiceNames } from "../helpers/taken-names.ts";
import { disposeOperator, metricValue, startOperatorProcess, Workloads, type OperatorProcess } from "../helpers/operator.ts";
import { httpGet } from "../helpers/http.ts";

const namespace = "default";
const scratch = mkdtempSync(join(tmpdir(), "appstack-postgres-test-"));
let postgres: PostgresServer | undefined;
const operators: OperatorProcess[] = [];
let workloads: Workloads;

/** The server's CA (its certificate names 127.0.0.1, the URL's host), and a CA that signed nothing of it. */
const serverCa = certificateAuthority("appstack-e2e-postgres-ca");
const serverCaFile = join(scratch, "server-ca.crt");
const otherCaFile = join(scratch, "other-ca.crt");

const cluster = useCluster(
  async ({ cluster: local }) => {
    writeFileSync(serverCaFile, serverCa.certPem);
    writeFileSync(otherCaFile, certificateAuthority("appstack-e2e-other-ca").certPem);
    // TLS on besides plain connections: the other tests' URL keeps sslmode=disable.
    postgres = await startPostgres({ dir: scratch, log: (line) => console.error(line), tls: servingCertificate(serverCa, "appstack-e2e-postgres", { ips: ["127.0.0.1"] }) });
    workloads = new Workloads(local.kubeconfig);
  },
  async () => {
    for (const operator of operators) await disposeOperator(operator).catch(() => undefined);
    // The server's data is in the scratch folder: removed only once the server has stopped.
    await postgres?.stop();
    rmSync(scratch, { recursive: true, force: true });
  },
);

const server = () => postgres!;
const singleEnv = () => ({ APPSTACK_BACKEND_URL: server().url, APPSTACK_LEADER_ELECT: "false" });

/** The server's URL with these TLS parameters instead of its `sslmode=disable`. */
function tlsUrl(params: Record<string, string>): string {
  const url = new URL(server().url);
  url.searchParams.delete("sslmode");
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  return url.href;
}

async function startOperator(env: Record<string, string>, stateDir?: string): Promise<OperatorProcess> {
  const operator = await startOperatorProcess(cluster().cluster.kubeconfig, { env, ...(stateDir ? { stateDir } : {}) });
  operators.push(operator);
  return operator;
}

/** Pulumi's keys in its table (prefixed with the URL's path, the database name). */
async function keys(prefix: string): Promise<string[]> {
  const rows = await server().query<{ key: string }>("SELECT key FROM pulumi_state WHERE key LIKE $1 ORDER BY key", [`postgres/${prefix}%`]);
  return rows.map((row) => row.key);
}

/** The lock rows of one stack (`app.default.<name>`), or of every stack. */
const lockRows = async (app?: string) => (await keys(".pulumi/locks/")).filter((key) => app === undefined || key.includes(`/app.default.${app}/`));
const stackRows = async (stack: string) => (await keys(".pulumi/")).filter((key) => key.includes(`/${stack}`));

const app = (name: string, spec: Record<string, unknown>) => ({ kind: "App" as const, metadata: { name, namespace }, spec });
const deployment = (name: string) => orUndefined(() => cluster().apps.readNamespacedDeployment({ name, namespace }));
const service = (name: string) => orUndefined(() => cluster().core.readNamespacedService({ name, namespace }));

test("an App created, updated and deleted on the postgres backend: children on the API server, rows in Pulumi's table, `appstack history` after the delete", async () => {
  const operator = await startOperator(singleEnv());
  await workloads.create(app("pg-web", { image: "nginx:1.27", replicas: 2, port: 80 }));
  await workloads.ready("App", namespace, "pg-web");
  assert.equal((await deployment("pg-web"))?.spec?.replicas, 2);
  assert.equal((await service("pg-web"))?.spec?.ports?.[0]?.port, 80);
  assert.ok((await keys(".pulumi/stacks/appstack/")).includes("postgres/.pulumi/stacks/appstack/app.default.pg-web.json"), "the stack is a row of Pulumi's table");

  await workloads.mergeSpec("App", namespace, "pg-web", { image: "nginx:1.28" });
  await eventually("the new image applied", async () => ((await deployment("pg-web"))?.spec?.template.spec?.containers[0]?.image === "nginx:1.28" ? true : undefined));
  await workloads.ready("App", namespace, "pg-web");

  await workloads.delete("App", namespace, "pg-web");
  await workloads.gone("App", namespace, "pg-web");
  assert.equal(await deployment("pg-web"), undefined);
  assert.equal(await service("pg-web"), undefined);
  assert.deepEqual(await stackRows("app.default.pg-web"), [], "nothing of the stack left under .pulumi/: checkpoint, backup, history");
  assert.deepEqual(await lockRows(), []);

  // The destroyed stack's history was kept aside (deleted-history/ rows) and is read from there.
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(repoRoot, "operator/cmd/cli.ts"), "history", "app/pg-web", "--stack", "-n", namespace, "-o", "json"], {
    env: { ...process.env, KUBECONFIG: cluster().cluster.kubeconfig, APPSTACK_STATE_DIR: operator.stateDir, APPSTACK_BACKEND_URL: server().url, APPSTACK_PASSPHRASE: "e2e-passphrase" },
    timeout: 120_000,
  });
  assert.match(stderr, /was deleted at .*these rows were kept from its history/);
  const rows = JSON.parse(stdout) as HistoryRow[];
  assert.deepEqual(rows.map((row) => row.operation), ["update", "update", "destroy"]);
  assert.ok((await keys("deleted-history/")).some((key) => key.includes("-app.default.pg-web/")));
  await operator.stop();
});

test("on postgres too, a user's Service that took a deleted child's name is never deleted through the stack's state", async () => {
  const names = ["pg-taken-up", "pg-taken-destroy"];
  let operator = await startOperator(singleEnv());
  for (const name of names) await workloads.create(app(name, { image: "nginx:1.27", replicas: 1, port: 80 }));
  for (const name of names) await workloads.ready("App", namespace, name);
  // With the operator stopped, nothing repairs the deleted Services before the user's take their names.
  await operator.stop();
  const theirs = await takeServiceNames(cluster().core, namespace, names);
  for (const name of names) await workloads.mergeSpec("App", namespace, name, { port: null });
  await workloads.delete("App", namespace, "pg-taken-destroy");
  operator = await startOperator(singleEnv(), operator.stateDir);

  await workloads.ready("App", namespace, "pg-taken-up");
  await workloads.gone("App", namespace, "pg-taken-destroy");
  await assertServicesDropped(cluster().core, namespace, theirs);
  assert.equal(await deployment("pg-taken-destroy"), undefined, "the App's own child went with it");
  await workloads.delete("App", namespace, "pg-taken-up");
  await workloads.gone("App", namespace, "pg-taken-up");
  await assertUsersService(cluster().core, namespace, "pg-taken-up", theirs.get("pg-taken-up"));
  for (const name of names) await cluster().core.deleteNamespacedService({ name, namespace });
  await operator.stop();
});

/**
 * Creates App `name` and SIGKILLs `operator` while the admission webhook holds its Deployment's
 * create (the stack locked, the engine mid-update): the killed engine's lock stays a row of the table.
 */
async function killMidCreate(operator: OperatorProcess, name: string, replicas: number): Promise<void> {
  const creating = await holdWrites(cluster().cluster, "deployments", "CREATE", namespace, name);
  try {
    await workloads.create(app(name, { image: "nginx:1.27", replicas, port: 80 }));
    await creating.held;
    await operator.stop("SIGKILL");
    assert.equal((await lockRows(name)).length, 1, "the killed engine's lock is a row of the table");
  } finally {
    await creating.release();
  }
}

test("an operator SIGKILLed mid-update leaves its lock row; the restarted one breaks it (holder gone on this host) and converges, no lock row left", async () => {
  let operator = await startOperator(singleEnv());
  await killMidCreate(operator, "pg-crashy", 2);
  operator = await startOperator(singleEnv(), operator.stateDir);
  const ready = await workloads.ready("App", namespace, "pg-crashy");
  assert.equal(ready.status?.readyReplicas, 2);
  assert.equal((await deployment("pg-crashy"))?.status?.readyReplicas, 2);
  assert.deepEqual(await lockRows(), []);
  await workloads.delete("App", namespace, "pg-crashy");
  await workloads.gone("App", namespace, "pg-crashy");
  await operator.stop();
});

const leads = async (operator: OperatorProcess) => metricValue(await httpGet(`http://127.0.0.1:${operator.healthPort}/metrics`).then((r) => r.body, () => ""), "appstack_leader") === 1;

test("a leader and a standby on one postgres backend (each its own state folder): the leader killed mid-update, the standby takes over and the App converges", async () => {
  const env = { APPSTACK_BACKEND_URL: server().url };
  const pair = [await startOperator(env), await startOperator(env)];
  const { leader, standby } = await eventually("one leader and one standby", async () => {
    const flags = await Promise.all(pair.map(leads));
    const leader = pair[flags.indexOf(true)];
    return flags.filter(Boolean).length === 1 && leader ? { leader, standby: pair.find((o) => o !== leader)! } : undefined;
  });
  await killMidCreate(leader, "pg-failover", 1);
  await eventually("the standby to take over", async () => ((await leads(standby)) ? true : undefined));
  await workloads.mergeSpec("App", namespace, "pg-failover", { image: "nginx:1.28" });
  await eventually("the change made after the kill applied", async () => ((await deployment("pg-failover"))?.spec?.template.spec?.containers[0]?.image === "nginx:1.28" ? true : undefined), 120_000);
  const ready = await workloads.ready("App", namespace, "pg-failover");
  assert.equal(ready.status?.readyReplicas, 1);
  assert.equal((await service("pg-failover"))?.spec?.ports?.[0]?.port, 80);
  assert.deepEqual(await lockRows(), []);
  // The later tests each run one operator of their own: a leader left running here would reconcile
  // their objects too (it did once: an App Ready before that test's operator had written anything).
  await standby.stop();
});

test("the database's password changed under a running operator: the App says the backend refused, converges once it is back, and no log line, Event or status carries the password (Pulumi's error quotes the URL)", async () => {
  const password = new URL(server().url).password;
  const operator = await startOperator(singleEnv());
  await workloads.create(app("pg-rotated", { image: "nginx:1.27", replicas: 1 }));
  await workloads.ready("App", namespace, "pg-rotated");
  // One connection of the test's own, opened before the change, to change it back.
  const admin = new pg.Client({ connectionString: server().url, query_timeout: 15_000 });
  await admin.connect();
  try {
    await admin.query("ALTER ROLE appstack PASSWORD 'rotated-by-the-test'");
    await workloads.mergeSpec("App", namespace, "pg-rotated", { image: "nginx:1.28" });
    await eventually("the App to say the backend refused", async () => {
      const ready = (await workloads.get("App", namespace, "pg-rotated")).status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status === "False" && /password authentication failed/.test(ready.message ?? "") ? true : undefined;
    });
    const refused = (await workloads.get("App", namespace, "pg-rotated")).status;
    const events = await eventsOf(cluster().core, namespace, "pg-rotated");
    assert.ok(events.some((event) => /password authentication failed/.test(event.message ?? "")), "an Event says why");
    for (const [what, text] of [["the status", JSON.stringify(refused)], ["the Events", JSON.stringify(events)], ["the log", readFileSync(operator.logFile, "utf8")]] as const) {
      assert.ok(!text.includes(password), `${what} carries the password`);
    }
  } finally {
    // base64url: nothing to escape; ALTER ROLE takes no parameters.
    await admin.query(`ALTER ROLE appstack PASSWORD '${password}'`);
    await admin.end();
  }
  await eventually("the new image applied once the password is back", async () => ((await deployment("pg-rotated"))?.spec?.template.spec?.containers[0]?.image === "nginx:1.28" ? true : undefined), 120_000);
  await workloads.ready("App", namespace, "pg-rotated");
  await workloads.delete("App", namespace, "pg-rotated");
  await workloads.gone("App", namespace, "pg-rotated");
  await operator.stop();
});

/** Every regular file below `dir` (symlinks not followed: the plugin links point into the toolchain). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.isFile() ? [path] : [];
  });
}

test("the database's password is written to no file: not in the operator's state folder (workspace, engines' home, log), nor in the HOME and TMPDIR it and its engines use", async () => {
  const password = new URL(server().url).password;
  const stateDir = mkdtempSync(join(tmpdir(), "appstack-postgres-no-password-"));
  // A pod's writable volumes are the state folder and /tmp; here HOME and TMPDIR lie in the state folder too.
  const home = join(stateDir, "home");
  const tmp = join(stateDir, "tmp");
  for (const folder of [home, tmp]) mkdirSync(folder);
  // The pinned binaries stay where they were built (found through HOME otherwise).
  const operator = await startOperator({ ...singleEnv(), HOME: home, TMPDIR: tmp, APPSTACK_CACHE_DIR: cacheRoot() }, stateDir);
  await workloads.create(app("pg-no-password", { image: "nginx:1.27", replicas: 1, port: 80 }));
  await workloads.ready("App", namespace, "pg-no-password");
  await workloads.mergeSpec("App", namespace, "pg-no-password", { image: "nginx:1.28" });
  await eventually("the new image applied", async () => ((await deployment("pg-no-password"))?.spec?.template.spec?.containers[0]?.image === "nginx:1.28" ? true : undefined));
  await workloads.ready("App", namespace, "pg-no-password");
  const carrying = (files: string[]) => files.filter((file) => lstatSync(file).isFile() && readFileSync(file).includes(password));
  const files = filesUnder(stateDir);
  assert.ok(files.some((file) => file.endsWith("Pulumi.yaml")), "the scan reads the workspace");
  assert.deepEqual(carrying(files), [], "files of a running operator carrying the password");
  await workloads.delete("App", namespace, "pg-no-password");
  await workloads.gone("App", namespace, "pg-no-password");
  await operator.stop();
  assert.deepEqual(carrying(filesUnder(stateDir)), [], "files of a stopped operator carrying the password");
});

/** The log of an operator that exited, having refused to start; it exited non-zero. */
async function refusalOf(refused: OperatorProcess): Promise<string> {
  const exitCode = await new Promise<number | null>((resolve) => (refused.child.exitCode !== null || refused.child.signalCode !== null ? resolve(refused.child.exitCode) : refused.child.once("exit", resolve)));
  assert.notEqual(exitCode, 0);
  const log = readFileSync(refused.logFile, "utf8");
  assert.ok(!log.includes(new URL(server().url).password), "the log carries no password");
  await refused.stop();
  return log;
}

/** An App made, Ready, deleted and gone. */
async function readyAndGone(name: string): Promise<void> {
  await workloads.create(app(name, { image: "nginx:1.27", replicas: 1 }));
  await workloads.ready("App", namespace, name);
  await workloads.delete("App", namespace, name);
  await workloads.gone("App", namespace, name);
}

/** An operator's /readyz once it answers 200: its lines under "ok", the warnings. */
async function readyWarnings(operator: OperatorProcess): Promise<string[]> {
  const body = await eventually("/readyz to answer 200", async () => {
    const readyz = await httpGet(`http://127.0.0.1:${operator.healthPort}/readyz`);
    return readyz.status === 200 ? readyz.body : undefined;
  });
  const [verdict, ...warnings] = body.trimEnd().split("\n");
  assert.equal(verdict, "ok");
  return warnings;
}

test("TLS to PostgreSQL: with another CA than the server's, or with the server's CA, no sslmode and a host name its certificate does not name, the operator refuses to start, saying the server's certificate could not be verified; with verify-full and the server's CA (in the URL, or in PGSSLROOTCERT as the install gives it, sslmode then verify-full by default), and with require (a warning in /readyz), an App is Ready", async () => {
  const otherCa = await refusalOf(await startOperator({ APPSTACK_BACKEND_URL: tlsUrl({ sslmode: "verify-full", sslrootcert: otherCaFile }), APPSTACK_LEADER_ELECT: "false" }));
  assert.match(otherCa, /could not start.*its certificate could not be verified against the CA bundle \S*other-ca\.crt \(sslmode=verify-full, its host name too\)/);
  // The install's way with the server's CA and no sslmode: verify-full, so a host name the certificate does not name is refused.
  const localhost = new URL(tlsUrl({}));
  localhost.hostname = "localhost";
  const wrongHost = await refusalOf(await startOperator({ APPSTACK_BACKEND_URL: localhost.href, PGSSLROOTCERT: serverCaFile, APPSTACK_LEADER_ELECT: "false" }));
  assert.match(wrongHost, /could not start.*its certificate could not be verified against the CA bundle \S*server-ca\.crt \(sslmode=verify-full, its host name too\)/);

  // The server's CA given: host name and chain verified by the operator's reads and by the engine.
  const name = "pg-tls";
  const verifying = await startOperator({ APPSTACK_BACKEND_URL: tlsUrl({ sslmode: "verify-full", sslrootcert: serverCaFile }), APPSTACK_LEADER_ELECT: "false" });
  assert.deepEqual(await readyWarnings(verifying), []);
  await workloads.create(app(name, { image: "nginx:1.27", replicas: 1, port: 80 }));
  await workloads.ready("App", namespace, name);
  assert.equal((await service(name))?.spec?.ports?.[0]?.port, 80);
  assert.ok((await keys(".pulumi/stacks/appstack/")).includes(`postgres/.pulumi/stacks/appstack/app.default.${name}.json`), "the engine wrote its checkpoint");
  await workloads.delete("App", namespace, name);
  await workloads.gone("App", namespace, name);
  await verifying.stop();

  // require: encrypted, the server's CA neither given nor asked for (where `pg` used to verify it against Node's list).
  const encrypting = await startOperator({ APPSTACK_BACKEND_URL: tlsUrl({ sslmode: "require" }), APPSTACK_LEADER_ELECT: "false" });
  const warnings = await readyWarnings(encrypting);
  assert.equal(warnings.length, 1, warnings.join("\n"));
  assert.match(warnings[0]!, /^warning: the server's certificate is not verified: sslmode=require .*give a CA \(PGSSLROOTCERT \/ appstack:backendCaSecret\) and sslmode=verify-full$/);
  assert.match(readFileSync(encrypting.logFile, "utf8"), /"level":"warn".*the server's certificate is not verified/);
  await readyAndGone(`${name}-require`);
  await encrypting.stop();

  // The install's way (appstack:backendCaSecret): the bundle named by PGSSLROOTCERT, the URL naming
  // neither it nor sslmode: verify-full for the operator and its engines, which write the stack.
  const installed = await startOperator({ APPSTACK_BACKEND_URL: tlsUrl({}), PGSSLROOTCERT: serverCaFile, APPSTACK_LEADER_ELECT: "false" });
  assert.deepEqual(await readyWarnings(installed), [], "verify-full: nothing to warn of");
  await readyAndGone(`${name}-env`);
  assert.deepEqual(await stackRows(`app.default.${name}`), [], "nothing of the stacks left");
  await installed.stop();
});
