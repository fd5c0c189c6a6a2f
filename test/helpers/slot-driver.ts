// A StackDriver of its own state folder, as the operator makes one, for the kept providers' tests
// (provider-slots.test.ts, provider-fallback.test.ts): the cluster's admin as the operator, and
// tenant identities as that admin acting as the user an operation names.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import yaml from "js-yaml";
import type { App } from "../../components/app.ts";
import type { Logger } from "../../operator/base/log.ts";
import { stackName } from "../../operator/pulumi/stack-names.ts";
import { prepareWorkDir } from "../../operator/pulumi/stack-selection.ts";
import { StackDriver, type StackDriverSettings } from "../../operator/pulumi/stacks.ts";
import { StateIo } from "../../operator/pulumi/state-io.ts";
import { engineBinaries } from "../../toolchain/tools.ts";

/** The kubeconfig of the cluster's admin acting as `user` (identities.ts takes a kubeconfig's text per user). */
export function adminAs(kubeconfig: string, user: string): string {
  const config = yaml.load(readFileSync(kubeconfig, "utf8")) as { users: { user: Record<string, unknown> }[] };
  for (const entry of config.users) entry.user["as"] = user;
  return yaml.dump(config);
}

export type SlotOptions = Pick<StackDriverSettings, "operationTimeoutMs" | "providerIdleMs" | "providerSlotBinary">;

/** A driver whose engines attach to `slots` providers kept alive (0: each starts its own). */
export async function slotDriver(kubeconfig: string, stateDir: string, slots: number, log: Logger, options: SlotOptions = {}): Promise<StackDriver> {
  const io = new StateIo(60_000);
  await io.makeFolder(join(stateDir, "backend"));
  return new StackDriver({
    backendUrl: `file://${join(stateDir, "backend")}`, pulumiHome: join(stateDir, "home"), passphrase: "slots", binaries: engineBinaries(), kubeconfig,
    workDir: await prepareWorkDir(join(stateDir, "work"), io), providerSlots: slots,
    identities: { folder: join(stateDir, "identities"), kubeconfigAs: (user) => adminAs(kubeconfig, user) },
    ...options,
  }, log);
}

/** The stack of an App, as the operator names it. */
export const appStack = (app: App) => stackName("App", app.metadata.namespace, app.metadata.name);
