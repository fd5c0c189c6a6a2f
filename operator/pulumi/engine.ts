// How appstack runs the Pulumi engine: the pinned CLI and provider (their paths come in the
// settings, from the wiring that knows the toolchain), a backend, the operator's own key service
// for the stacks' secrets, and nothing ever downloaded. Resolved once, used by every stack.
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PulumiCommand, type LocalWorkspaceOptions } from "@pulumi/pulumi/automation/index.js";
import { secretsProviderUrl, startKeyService, type KeyService } from "./key-service.ts";
import { engineTlsEnv } from "./postgres-tls.ts";
import type { StateIo } from "./state-io.ts";

/** The binaries the engine runs; operator/cmd/ gives the pinned ones (toolchain/tools.ts: engineBinaries). */
export interface EngineBinaries {
  /** The folder holding the CLI as `bin/pulumi`. */
  readonly cliRoot: string;
  /** The Kubernetes provider plugin: the version the SDK asks for, and its binary. */
  readonly kubernetesProvider: { readonly version: string; readonly path: string };
}

export interface EngineSettings {
  /** Any Pulumi backend URL; `file://<dir>` by default. */
  readonly backendUrl: string;
  /** The engine's own state (plugins, credentials): kept apart from the user's ~/.pulumi. */
  readonly pulumiHome: string;
  /** Encrypts stack secrets: the key service derives its key from it (see key-service.ts). */
  readonly passphrase: string;
  /** The cluster the Kubernetes provider talks to; unset means in-cluster or the default rules. */
  readonly kubeconfig?: string;
  /** The CLI and the provider plugin. */
  readonly binaries: EngineBinaries;
}

/** The file backend's own folder (`.pulumi` below the URL's path); undefined for any other backend. */
export function fileBackendRoot(backendUrl: string): string | undefined {
  return backendUrl.startsWith("file://") ? join(fileURLToPath(backendUrl), ".pulumi") : undefined;
}

/**
 * Promises kept per key, one start each; one that fails is dropped, so that the next call starts
 * again rather than every later one failing until a restart. Only the failed one is dropped: a
 * forgotten start may fail after the next one began.
 */
class KeptUnlessFailed<T> {
  private readonly kept = new Map<string, Promise<T>>();

  get(key: string, start: () => Promise<T>): Promise<T> {
    const kept = this.kept.get(key);
    if (kept) return kept;
    const started = start();
    this.kept.set(key, started);
    started.catch(() => this.kept.get(key) === started && this.kept.delete(key));
    return started;
  }

  forget(key: string): void {
    this.kept.delete(key);
  }
}

const commands = new KeptUnlessFailed<PulumiCommand>();

/**
 * The CLI, checked once (`pulumi version`: the Automation API refuses a CLI older than the SDK);
 * a failed check is checked again. `pulumiHome` is where the check may write: see checkedInHome.
 */
export function pulumiCommand(pulumiHome: string, io: StateIo, root: string): Promise<PulumiCommand> {
  return commands.get(root, () => checkedInHome(root, pulumiHome, io));
}

/**
 * `PulumiCommand.get`, with the engines' home. It runs `pulumi version` with this process's own
 * environment, and Pulumi writes a log of every command into its home: without this, one more
 * file in the user's ~/.pulumi/logs for every start of the operator, its command line and every
 * test, where appstack's engines keep theirs apart (and with their logs off). `get` starts the
 * process before its first await, so the environment is set for exactly that call. Pinned by
 * test/unit/engine-home.test.ts, which fails if a log lands in the home of this process.
 */
async function checkedInHome(root: string, pulumiHome: string, io: StateIo): Promise<PulumiCommand> {
  await turnOffAutomaticLogs(pulumiHome, io);
  const own = process.env["PULUMI_HOME"];
  process.env["PULUMI_HOME"] = pulumiHome;
  try {
    return PulumiCommand.get({ root });
  } finally {
    if (own === undefined) delete process.env["PULUMI_HOME"];
    else process.env["PULUMI_HOME"] = own;
  }
}

/** Forgets a check still running (it is being killed past its deadline): the next operation checks again. */
export function forgetPulumiCommand(root: string): void {
  commands.forget(root);
}

/**
 * The provider plugin in the engines' home, where an engine finds it, and from where the operator
 * starts the providers it keeps (provider-slots.ts): a process started from there that outlives
 * its operator is one a restarted operator finds and kills (orphans.ts).
 */
export function providerPluginPath(pulumiHome: string, version: string): string {
  return join(pulumiHome, "plugins", `resource-kubernetes-v${version}`, "pulumi-resource-kubernetes");
}

/**
 * Installs the pinned provider into the engine's plugin folder, where the engine looks for the
 * exact version the SDK asks for (no download, no "ambient plugin from $PATH" warning).
 */
export async function installProviderPlugin(pulumiHome: string, io: StateIo, provider: EngineBinaries["kubernetesProvider"]): Promise<void> {
  const binary = providerPluginPath(pulumiHome, provider.version);
  const dir = dirname(binary);
  const target = provider.path;
  if ((await io.exists(binary)) && (await io.readLink(binary)) === target) return;
  await io.makeFolder(dir);
  await io.remove(`${dir}.partial`);
  // Made aside and renamed over: a rename is atomic, so two operations that install it at once
  // (a driver's first ones) never meet a missing or half-made link.
  const partial = `${binary}.${process.pid}-${randomUUID()}`;
  await io.symlink(target, partial);
  await io.rename(partial, binary);
}

/**
 * Every Pulumi command writes a debug-level log of its own under `<PULUMI_HOME>/logs` (compressed,
 * encrypted once it has the stack's secrets manager), keeps up to 500 MiB of them for 7 days, and
 * lists the folder at every start to rotate it: for the operator, about 6% of an operation's
 * engine CPU and up to 500 MiB of its state folder for logs it already has (the engine's output is
 * in appstack's log at debug level). Pulumi 3.259 has no setting to turn them off, but goes on
 * without them when it cannot create that folder, so `logs` is made a file. Pinned by
 * test/unit/engine-home.test.ts, which fails if the CLI writes them anyway or refuses to run.
 */
export async function turnOffAutomaticLogs(pulumiHome: string, io: StateIo): Promise<void> {
  const logs = join(pulumiHome, "logs");
  if (await io.isFile(logs)) return;
  await io.makeFolder(pulumiHome);
  await io.remove(logs, true); // the logs of an earlier version
  await io.write(logs, "Pulumi's automatic logs are off for appstack's engines: see operator/pulumi/engine.ts\n");
}

/**
 * Every CLI start on a project-scoped backend (appstack's are) lists the whole stacks folder for
 * stack files of the old, unscoped layout, only to warn about them: a cost that grows with the
 * number of stacks (about 13 of the 55 ms of CPU the CLI's start grew by from 1 to 1,000 stacks).
 * appstack never writes that layout; this turns the scan off, and nothing else.
 */
export const withoutLegacyScan = { PULUMI_DIY_BACKEND_NO_LEGACY_WARNING: "true" } as const;

/** GOGC of the engines and their plugins: see workspaceOptions. */
export const engineGcPercent = "200";

const keyServices = new KeptUnlessFailed<KeyService>();

/** The key service of `passphrase`: one per passphrase and process, started on first use. */
export function keyServiceFor(passphrase: string): Promise<KeyService> {
  return keyServices.get(passphrase, () => startKeyService(passphrase));
}

/** The options of every workspace; the engines' home is prepared through `io` (it lies in the state folder). */
export async function workspaceOptions(settings: EngineSettings, projectName: string, io: StateIo): Promise<LocalWorkspaceOptions> {
  await installProviderPlugin(settings.pulumiHome, io, settings.binaries.kubernetesProvider);
  await turnOffAutomaticLogs(settings.pulumiHome, io);
  return {
    pulumiCommand: await pulumiCommand(settings.pulumiHome, io, settings.binaries.cliRoot),
    pulumiHome: settings.pulumiHome,
    secretsProvider: secretsProviderUrl,
    // No backend here: a workspace writes its project settings to Pulumi.yaml, and the URL may
    // carry a password. The engines read it from PULUMI_BACKEND_URL below.
    projectSettings: { name: projectName, runtime: "nodejs" },
    envVars: {
      PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
      PULUMI_SKIP_UPDATE_CHECK: "true",
      // No third copy of every checkpoint under .pulumi/backups/ (history-retention.ts).
      PULUMI_DISABLE_CHECKPOINT_BACKUPS: "true",
      // A stack whose settings file is not in the workspace (the preview command's copy of the
      // state has none) opens its secrets with its state's provider, not a new passphrase one.
      PULUMI_FALLBACK_TO_STATE_SECRETS_MANAGER: "true",
      ...withoutLegacyScan,
      PULUMI_BACKEND_URL: settings.backendUrl,
      // On PostgreSQL with a CA and no sslmode, verify-full, as the operator's own reads take it
      // (lib/pq would take require, leaving the host name unchecked): postgres-tls.ts.
      ...engineTlsEnv(settings.backendUrl),
      // The CLI and its provider plugin (which inherits this) live for one operation; Go's
      // default GOGC=100 has them collect garbage several times while their packages start and
      // while the provider parses the API server's OpenAPI document. At 200 they collect half as
      // often: about a tenth less CPU per operation for a few MiB more of each process's peak
      // (docs/development/benchmark.md, "Where the cost goes").
      GOGC: engineGcPercent,
      // On PostgreSQL, Pulumi 3.259 reading its default ten stacks at once for `stack ls` was seen
      // not to finish on a table of five stacks or more; one at a time lists 30 in 0.2 s. The
      // operator reads rows itself (Checkpoints.stored); this is for `appstack stacks stack ls`.
      ...(/^postgres(ql)?:\/\//.test(settings.backendUrl) ? { PULUMI_DIY_BACKEND_PARALLEL: "1" } : {}),
      // Stacks made before the key service still use the passphrase provider.
      PULUMI_CONFIG_PASSPHRASE: settings.passphrase,
      ...(await keyServiceFor(settings.passphrase)).env,
      ...(settings.kubeconfig ? { KUBECONFIG: settings.kubeconfig } : {}),
    },
  };
}
