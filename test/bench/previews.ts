// The preview part of `npm run bench`: N Apps with updatePolicy Preview applied at once, the time
// until every one has a preview waiting, then until every approved plan is Ready; and the whole
// `appstack preview -f` command, for an object with a stack and for a new one.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { approveAnnotation } from "../../crds/types.ts";
import type { App } from "../../components/app.ts";
import { mergePatch, type KubeClients } from "../../operator/kube/clients.ts";
import { repoRoot } from "../../toolchain/tools.ts";

export interface PreviewRound {
  readonly n: number;
  /** From the first create until every App has status.preview. */
  readonly previewedSeconds: number;
  /** From the first approval until every App is Ready. */
  readonly approvedSeconds: number;
}

export interface CliTimes {
  readonly existing: number[];
  readonly created: number[];
}

const api = { group: "appstack.dev", version: "v1alpha1", plural: "apps" };

async function until(clients: KubeClients, namespace: string, n: number, done: (app: App) => boolean): Promise<App[]> {
  const deadline = Date.now() + 30 * 60_000;
  for (;;) {
    const list = (await clients.custom.listNamespacedCustomObject({ ...api, namespace })) as { items: App[] };
    const finished = list.items.filter(done);
    if (finished.length >= n) return finished;
    if (Date.now() > deadline) throw new Error(`only ${finished.length} of ${n} done after 30 minutes`);
    await sleep(250);
  }
}

export async function previewRound(clients: KubeClients, namespace: string, n: number): Promise<PreviewRound> {
  await clients.core.createNamespace({ body: { metadata: { name: namespace } } });
  const started = Date.now();
  await Promise.all(Array.from({ length: n }, (_, i) => clients.custom.createNamespacedCustomObject({
    ...api, namespace,
    body: { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: `gated-${i}`, namespace }, spec: { image: "nginx:1.27", replicas: 1, port: 80, updatePolicy: "Preview" } },
  })));
  const previewed = await until(clients, namespace, n, (app) => app.status?.preview?.generation === app.metadata.generation);
  const previewedSeconds = (Date.now() - started) / 1000;
  const approving = Date.now();
  await Promise.all(previewed.map((app) => clients.custom.patchNamespacedCustomObject(
    { ...api, namespace, name: app.metadata.name, body: { metadata: { annotations: { [approveAnnotation]: app.status!.preview!.planId } } } },
    mergePatch,
  )));
  await until(clients, namespace, n, (app) => !!app.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
  return { n, previewedSeconds, approvedSeconds: (Date.now() - approving) / 1000 };
}

/** Whole `appstack preview -f` commands (Node start, dry run, engine), `runs` times each. */
export function cliTimes(kubeconfig: string, stateDir: string, passphrase: string, existing: { namespace: string; name: string }, runs = 3): CliTimes {
  const folder = mkdtempSync(join(tmpdir(), "appstack-bench-preview-"));
  const time = (spec: Record<string, unknown>, name: string) => {
    const file = join(folder, `${name}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name, namespace: existing.namespace }, spec }));
    return Array.from({ length: runs }, () => {
      const started = Date.now();
      const result = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "operator/cmd/cli.ts"), "preview", "-f", file], { cwd: repoRoot, env: { ...process.env, KUBECONFIG: kubeconfig, APPSTACK_STATE_DIR: stateDir, APPSTACK_PASSPHRASE: passphrase } });
      if (result.status !== 2) throw new Error(`appstack preview exited ${result.status}: ${result.stderr.toString()}`);
      return (Date.now() - started) / 1000;
    }).sort((a, b) => a - b);
  };
  try {
    return { existing: time({ image: "nginx:1.27", replicas: 5, port: 80 }, existing.name), created: time({ image: "nginx:1.27" }, "not-yet") };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
