// How appstack runs the Pulumi engine: the pinned CLI and provider from the toolchain, a backend,
// a passphrase secrets provider, and nothing ever downloaded. Resolved once, used by every stack.
import { existsSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PulumiCommand, type LocalWorkspaceOptions } from "@pulumi/pulumi/automation/index.js";
import { kubernetesProviderVersion, toolPath } from "../../toolchain/tools.ts";

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

/** The file backend's own folder (`.pulumi` below the URL's path); undefined for any other backend. */
export function fileBackendRoot(backendUrl: string): string | undefined {
  return backendUrl.startsWith("file://") ? join(fileURLToPath(backendUrl), ".pulumi") : undefined;
}

let command: Promise<PulumiCommand> | undefined;

/** The pinned CLI, checked once: the Automation API refuses a CLI older than the SDK. */
export function pulumiCommand(): Promise<PulumiCommand> {
  command ??= PulumiCommand.get({ root: dirname(dirname(toolPath("pulumi"))) });
  return command;
}

/**
 * Installs the pinned provider into the engine's plugin folder, where the engine looks for the
 * exact version the SDK asks for (no download, no "ambient plugin from $PATH" warning).
 */
export function installProviderPlugin(pulumiHome: string): void {
  const version = kubernetesProviderVersion();
  const dir = join(pulumiHome, "plugins", `resource-kubernetes-v${version}`);
  const binary = join(dir, "pulumi-resource-kubernetes");
  const target = toolPath("pulumi-resource-kubernetes");
  if (existsSync(binary) && readlinkSync(binary) === target) return;
  mkdirSync(dir, { recursive: true });
  rmSync(`${dir}.partial`, { force: true });
  rmSync(binary, { force: true });
  symlinkSync(target, binary);
}

export async function workspaceOptions(settings: EngineSettings, projectName: string): Promise<LocalWorkspaceOptions> {
  installProviderPlugin(settings.pulumiHome);
  return {
    pulumiCommand: await pulumiCommand(),
    pulumiHome: settings.pulumiHome,
    secretsProvider: "passphrase",
    projectSettings: { name: projectName, runtime: "nodejs", backend: { url: settings.backendUrl } },
    envVars: {
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      PULUMI_BACKEND_URL: settings.backendUrl,
      PULUMI_CONFIG_PASSPHRASE: settings.passphrase,
      ...(settings.kubeconfig ? { KUBECONFIG: settings.kubeconfig } : {}),
    },
  };
}
