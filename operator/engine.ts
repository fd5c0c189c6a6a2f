// How appstack runs the Pulumi engine: the pinned CLI and provider from the toolchain, a backend,
// a passphrase secrets provider, and nothing ever downloaded. Resolved once, used by every stack.
import { dirname } from "node:path";
import { PulumiCommand, type LocalWorkspaceOptions } from "@pulumi/pulumi/automation/index.js";
import { pulumiEnvironment, toolPath } from "../toolchain/tools.ts";

export interface EngineSettings {
  /** Any Pulumi backend URL; `file://<dir>` by default. */
  readonly backendUrl: string;
  /** The engine's own state (plugins, credentials): kept apart from the user's ~/.pulumi. */
  readonly pulumiHome: string;
  /** Encrypts stack secrets (passphrase secrets provider). */
  readonly passphrase: string;
  /** The cluster the Kubernetes provider talks to; unset means in-cluster or the default rules. */
  readonly kubeconfig?: string;
}

let command: Promise<PulumiCommand> | undefined;

/** The pinned CLI, checked once: the Automation API refuses a CLI older than the SDK. */
export function pulumiCommand(): Promise<PulumiCommand> {
  command ??= PulumiCommand.get({ root: dirname(dirname(toolPath("pulumi"))) });
  return command;
}

export async function workspaceOptions(settings: EngineSettings, projectName: string): Promise<LocalWorkspaceOptions> {
  return {
    pulumiCommand: await pulumiCommand(),
    pulumiHome: settings.pulumiHome,
    secretsProvider: "passphrase",
    projectSettings: { name: projectName, runtime: "nodejs", backend: { url: settings.backendUrl } },
    envVars: {
      ...pulumiEnvironment(),
      PULUMI_BACKEND_URL: settings.backendUrl,
      PULUMI_CONFIG_PASSPHRASE: settings.passphrase,
      ...(settings.kubeconfig ? { KUBECONFIG: settings.kubeconfig } : {}),
    },
  };
}
