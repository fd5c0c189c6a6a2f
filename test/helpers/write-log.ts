// Every write to appstack's children in one namespace, with who made it: a validating admission
// webhook that allows everything and records each Deployment and Service create, update and delete
// (dry runs left out) with the request's user. With a client certificate per operator replica
// (replicaKubeconfig), a test tells the replicas apart and checks that no object was written by two
// of them in overlapping windows. It also records the writes of the Apps themselves (labels,
// finalizers, status) and of Events, so that a test can check that a replica wrote nothing at all
// past a moment; and it can hold one user's status write of an App, to stop a reconcile at a known
// point (right before its Pulumi update).
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import yaml from "js-yaml";
import { kubeconfigYaml } from "../../toolchain/cluster/kubeconfig.ts";
import { clientCertificate } from "../../toolchain/cluster/pki.ts";
import { serveAdmission, type ClusterFiles } from "./admission-server.ts";

export interface Write {
  /** Date.now() when the webhook saw it. */
  readonly at: number;
  readonly user: string;
  readonly operation: string;
  /** deployments/NAME or services/NAME. */
  readonly object: string;
}

interface Request {
  uid: string;
  operation: string;
  dryRun?: boolean;
  name?: string;
  namespace?: string;
  resource: { resource: string };
  subResource?: string;
  userInfo?: { username?: string };
}

export interface WriteLog {
  readonly writes: readonly Write[];
  /** Writes of the Apps themselves (apps/NAME: labels, finalizers; apps/NAME/status) and of Events (events/NAME). */
  readonly otherWrites: readonly Write[];
  /** Holds the next status write of App `name` by `user` until released; `held` resolves once one waits. */
  holdStatusWrite(user: string, name: string): { held: Promise<void>; release(): void };
  remove(): Promise<void>;
}

/** A kubeconfig of the cluster for `user` (in system:masters): its own client certificate, so that admission sees who wrote. */
export function replicaKubeconfig(local: ClusterFiles, user: string): string {
  const pki = (file: string) => readFileSync(join(local.dir, "pki", file), "utf8");
  const admin = yaml.load(readFileSync(local.kubeconfig, "utf8")) as { clusters: { name: string; cluster: { server: string } }[] };
  const cluster = admin.clusters[0]!;
  const identity = clientCertificate({ certPem: pki("ca.crt"), keyPem: pki("ca.key") }, { commonName: user, organization: "system:masters" });
  const path = join(local.dir, `${user}.kubeconfig`);
  writeFileSync(path, kubeconfigYaml(cluster.name, cluster.cluster.server, pki("ca.crt"), user, identity), { mode: 0o600 });
  return path;
}

const probeName = "write-log-probe";

export async function recordWrites(local: ClusterFiles, namespace: string): Promise<WriteLog> {
  const writes: Write[] = [];
  const otherWrites: Write[] = [];
  const holds: { user: string; name: string; settle: () => void; waiting: (() => void)[]; released: boolean }[] = [];
  const operations = ["CREATE", "UPDATE", "DELETE"];
  const webhook = await serveAdmission<Request>(
    local,
    {
      purpose: "write-log",
      kind: "validating",
      configName: "appstack-test-write-log",
      namespace,
      timeoutSeconds: 30,
      rules: [
        { apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations, scope: "Namespaced" },
        { apiGroups: [""], apiVersions: ["v1"], resources: ["services"], operations, scope: "Namespaced" },
        { apiGroups: ["appstack.dev"], apiVersions: ["*"], resources: ["apps", "apps/status"], operations: ["UPDATE"], scope: "Namespaced" },
        { apiGroups: [""], apiVersions: ["v1"], resources: ["events"], operations, scope: "Namespaced" },
      ],
      probe: { name: probeName },
    },
    (request, answer) => {
      const allow = () => answer({ allowed: true });
      const user = request.userInfo?.username ?? "";
      if (request.resource.resource === "events" || request.resource.resource === "apps") {
        const object = `${request.resource.resource}/${request.name}${request.subResource ? `/${request.subResource}` : ""}`;
        if (!request.dryRun) otherWrites.push({ at: Date.now(), user, operation: request.operation, object });
      }
      if (request.resource.resource === "apps" && request.subResource === "status") {
        const hold = holds.find((h) => !h.released && h.user === user && h.name === request.name);
        if (!hold) return allow();
        hold.waiting.push(allow);
        return hold.settle();
      }
      if (request.resource.resource === "events" || request.resource.resource === "apps") return allow();
      if (!request.dryRun && !request.subResource) writes.push({ at: Date.now(), user, operation: request.operation, object: `${request.resource.resource}/${request.name}` });
      allow();
    },
  );
  return {
    writes,
    otherWrites,
    holdStatusWrite(user, name) {
      let settle!: () => void;
      const held = new Promise<void>((resolve) => (settle = resolve));
      const hold = { user, name, settle, waiting: [] as (() => void)[], released: false };
      holds.push(hold);
      return {
        held,
        release() {
          hold.released = true;
          for (const answer of hold.waiting.splice(0)) answer();
        },
      };
    },
    async remove() {
      for (const hold of holds) for (const answer of hold.waiting.splice(0)) answer();
      await webhook.unregister();
      await webhook.close();
    },
  };
}

/**
 * The objects written by two users in overlapping windows: one whose writers, in order, return to
 * a user after another one wrote (A, B, A) while that other one still ran. An object handed back
 * (A, B, A with B gone, by `goneAt`, before A's return: a replica killed, or frozen and exited) is
 * no overlap: its writers' windows follow one another.
 */
export function interleavedWriters(writes: readonly Write[], users: (user: string) => boolean, goneAt: ReadonlyMap<string, number> = new Map()): string[] {
  const runs = new Map<string, { user: string; at: number }[]>();
  const overlapping = new Set<string>();
  for (const write of writes) {
    if (!users(write.user)) continue;
    const run = runs.get(write.object) ?? [];
    if (run.at(-1)?.user !== write.user) {
      const earlier = run.map((entry) => entry.user).lastIndexOf(write.user);
      if (earlier >= 0 && run.slice(earlier + 1).some((entry) => (goneAt.get(entry.user) ?? Infinity) > write.at)) overlapping.add(write.object);
      run.push({ user: write.user, at: write.at });
    }
    runs.set(write.object, run);
  }
  return [...overlapping].map((object) => `${object}: ${runs.get(object)!.map((entry) => entry.user).join(" -> ")}`);
}
