// `appstack cluster up` / `down` as a user runs them: two clusters side by side, then nothing left.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { clusterDir } from "../../toolchain/cluster/cluster.ts";
import { loadKubeConfig } from "../../toolchain/cluster/readiness.ts";
import { repoRoot } from "../../toolchain/tools.ts";
import { processesMentioning } from "../helpers/proctree.ts";

function appstack(...args: string[]): string {
  return execFileSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), ...args], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
}

/** `appstack <args>` against one cluster, with its exit code and both outputs. */
function appstackWith(kubeconfig: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const kubeCache = join(dirname(kubeconfig), "kube-cache");
  return spawnSync(process.execPath, [join(repoRoot, "operator/cmd/appstack.mjs"), ...args], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, KUBECONFIG: kubeconfig, KUBECACHEDIR: kubeCache } });
}

test("two clusters run side by side, and `down` leaves no process and no folder behind", async () => {
  const names = [`cli-a-${process.pid}`, `cli-b-${process.pid}`];
  try {
    const servers = new Set<string>();
    for (const name of names) {
      const env = appstack("cluster", "up", name);
      const kubeconfig = /export KUBECONFIG=(\S+)/.exec(env)?.[1];
      assert.ok(kubeconfig && existsSync(kubeconfig), env);
      const kc = loadKubeConfig(kubeconfig);
      servers.add(kc.getCurrentCluster()!.server);
      const nodes = await kc.makeApiClient(CoreV1Api).listNode();
      assert.equal(nodes.items.length, 2);
      // `up` returned: the control plane keeps running without the command that started it.
      assert.ok(processesMentioning(clusterDir(name)).length >= 5);
      // The printed lines are all a shell needs: the kubeconfig and the pinned kubectl.
      // kubectl's discovery cache goes into the cluster's folder, not the user's home or this folder.
      const nodes2 = execFileSync("bash", ["-c", `${env}\nkubectl get nodes -o name`], { encoding: "utf8", env: { PATH: "/usr/bin:/bin", KUBECACHEDIR: join(clusterDir(name), "kube-cache") } });
      assert.equal(nodes2.trim().split("\n").length, 2, nodes2);
      assert.match(appstackWith(kubeconfig, "kubectl", "get", "nodes").stdout, /Ready/);
    }
    // A cluster without appstack's API: the preview says so, and how to install it.
    const kubeconfig = /export KUBECONFIG=(\S+)/.exec(appstack("cluster", "env", names[0]!))![1]!;
    const preview = appstackWith(kubeconfig, "preview", "-f", join(repoRoot, "crds/samples/app.yaml"));
    assert.equal(preview.status, 1);
    assert.match(preview.stderr, /App default\/hello: the CRD apps.appstack.dev is not installed in this cluster; install appstack's API with `npx appstack kubectl apply --server-side -f crds\/yaml\/`/);
    assert.equal(appstackWith(kubeconfig, "kubectl", "apply", "--server-side", "-f", "crds/yaml/").status, 0);
    assert.match(appstackWith(kubeconfig, "kubectl", "get", "crd").stdout, /apps.appstack.dev/);
    assert.equal(servers.size, 2, "each cluster has its own API server port");
  } finally {
    for (const name of names) appstack("cluster", "down", name);
  }
  for (const name of names) {
    assert.deepEqual(processesMentioning(clusterDir(name)), []);
    assert.ok(!existsSync(clusterDir(name)));
  }
});
