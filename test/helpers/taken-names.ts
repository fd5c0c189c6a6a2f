// A user's Service taking a child's name: the ownership case that the file and the PostgreSQL
// backends both test. The stack's state still records the Service it made; the live object of
// that name is now someone else's, and appstack must never change or delete it through the state.
import assert from "node:assert/strict";
import type { CoreV1Api } from "@kubernetes/client-node";
import { eventually, eventWithReason, orUndefined } from "./cluster.ts";

const serviceOf = (core: CoreV1Api, namespace: string, name: string) => orUndefined(() => core.readNamespacedService({ name, namespace }));

/** Deletes each child Service of these names and creates a user's (port 5432) in its place; the user's uids by name. */
export async function takeServiceNames(core: CoreV1Api, namespace: string, names: readonly string[]): Promise<Map<string, string>> {
  const theirs = new Map<string, string>();
  for (const name of names) {
    await core.deleteNamespacedService({ name, namespace });
    await eventually(`Service ${name} to be gone`, async () => ((await serviceOf(core, namespace, name)) ? undefined : true));
    const created = await core.createNamespacedService({ namespace, body: { metadata: { name, labels: { owner: "dba" } }, spec: { selector: { app: "db" }, ports: [{ port: 5432 }] } } });
    theirs.set(name, created.metadata!.uid!);
  }
  return theirs;
}

/** The user's Service of this name is the one they made, untouched. */
export async function assertUsersService(core: CoreV1Api, namespace: string, name: string, uid: string | undefined): Promise<void> {
  const live = await serviceOf(core, namespace, name);
  assert.equal(live?.metadata?.uid, uid, `the user's Service ${name} is still there`);
  assert.equal(live?.spec?.ports?.[0]?.port, 5432);
}

/** Each object said why it dropped the Service from its state, and the user's Service is untouched. */
export async function assertServicesDropped(core: CoreV1Api, namespace: string, theirs: ReadonlyMap<string, string>): Promise<void> {
  for (const [name, uid] of theirs) {
    const event = await eventWithReason(core, namespace, name, "ForeignResourceDropped");
    assert.match(event.message ?? "", new RegExp(`Service ${namespace}/${name} \\(not created by appstack\\) took the name`));
    await assertUsersService(core, namespace, name, uid);
  }
}
