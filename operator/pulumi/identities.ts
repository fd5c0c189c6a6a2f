// Who an engine's Kubernetes provider acts as. By default the operator's own identity (the
// KUBECONFIG of its settings, or the pod's); with tenant identities on (controller/tenancy.ts),
// each operation names the user its object's children are written as, and the engine is given a
// kubeconfig that impersonates it, through its workspace's environment (the provider reads
// KUBECONFIG: pulumi/programs.ts). The kubeconfig holds no credential (kube/engine-kubeconfig.ts):
// one small file per user, written once per process in a folder of its own.
import { join } from "node:path";
import type { LocalWorkspace, Stack } from "@pulumi/pulumi/automation/index.js";
import type { StateIo } from "./state-io.ts";

/** The engines' identities: `kubeconfigAs(user)` is the text of a kubeconfig acting as `user`. */
export interface IdentitySettings {
  readonly folder: string;
  readonly kubeconfigAs: (user: string) => string;
}

export class EngineIdentities {
  private readonly files = new Map<string, Promise<string>>();
  private readonly settings: IdentitySettings | undefined;
  private readonly ownKubeconfig: string | undefined;
  private readonly io: StateIo;

  constructor(settings: IdentitySettings | undefined, ownKubeconfig: string | undefined, io: StateIo) {
    this.settings = settings;
    this.ownKubeconfig = ownKubeconfig;
    this.io = io;
  }

  /**
   * Sets who the stack's next operations act as: `user`, or the operator itself when undefined.
   * A user asked for where no identities are configured is an error, never the operator's own rights.
   */
  async actAs(stack: Stack, user: string | undefined): Promise<void> {
    const env = (stack.workspace as LocalWorkspace).envVars;
    if (user) env["KUBECONFIG"] = await this.kubeconfigOf(user);
    else if (this.ownKubeconfig) env["KUBECONFIG"] = this.ownKubeconfig;
    else delete env["KUBECONFIG"];
  }

  private kubeconfigOf(user: string): Promise<string> {
    const settings = this.settings;
    if (!settings) return Promise.reject(new Error(`asked to act as ${user}, but tenant identities are off`));
    let file = this.files.get(user);
    if (!file) {
      // system:serviceaccount:<ns>:<name>: a namespace has no dot or underscore, so the name is unambiguous.
      const path = join(settings.folder, `${user.replace(/[^a-z0-9.-]/g, "_")}.kubeconfig`);
      file = this.io.makeFolder(settings.folder).then(() => this.io.write(path, settings.kubeconfigAs(user))).then(() => path);
      void file.catch(() => this.files.delete(user));
      this.files.set(user, file);
    }
    return file;
  }
}
