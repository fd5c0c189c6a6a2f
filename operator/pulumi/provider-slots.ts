// The Kubernetes provider kept alive per engine slot. Every engine operation used to start its
// own provider plugin process: its start and page-in were a third of the plugin's CPU per
// operation (docs/development/benchmark.md). Here the operator keeps one provider process per operation that
// runs at once, and each engine attaches to an idle one (PULUMI_DEBUG_PROVIDERS=kubernetes:PORT,
// the engine's way to use a provider that is already running). The process is ours
// (toolchain/kubernetes-provider: slot.go): every engine connection gets a new provider inside it,
// so no configuration, cache or cancellation passes from one stack to the next, and the provider
// reads the operation's KUBECONFIG, which the operator sets over the process's standard input
// before the engine starts. A process whose operation failed, timed out or was killed is not
// trusted again: it is killed and the next operation starts a new one.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import type { Logger } from "../base/log.ts";
import { attachAccepted, SlotProtocolMismatch } from "./provider-check.ts";

/** How long a provider process may take to start, or to take an operation's environment. */
const answerTimeoutMs = 30_000;

export interface ProviderSlotSettings {
  /** The provider binary (toolchain/kubernetes-provider). */
  readonly binary: string;
  /** The environment every provider process starts with (GOGC; the operator's own otherwise). */
  readonly env: Readonly<Record<string, string>>;
  /** Idle processes kept: one per operation the operator runs at once. */
  readonly keep: number;
  /** How long an idle process is kept for the next operation; 30 s unless set. */
  readonly idleMs?: number;
}

/**
 * An idle provider keeps its code mapped, about 70 MiB of PSS each (its heap goes back to the
 * system when it idles: slot.go): worth it while operations come, not for a quiet hour.
 */
const defaultIdleMs = 30_000;

/**
 * What a provider process gets of the operator's environment: what Go, client-go and the provider
 * read to reach the API server, and nothing else. A list of what to keep, not of what to drop: a
 * process's environment is readable as long as it lives, and an object store's credentials
 * (AWS_*, AZURE_*, GOOGLE_*), the passphrase and the backend URL are the operator's and the
 * engines', never the provider's. APPSTACK_PROVIDER_ENV names more (comma-separated), for a
 * kubeconfig whose exec credential plugin needs them (AWS_PROFILE for `aws eks get-token`).
 */
const providerVariables = [
  "PATH", "HOME", "TMPDIR", "TZ", "LANG", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
  "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR",
  "GODEBUG", "GOMAXPROCS", "GOMEMLIMIT",
];
/** The provider's own settings (PULUMI_K8S_SUPPRESS_DEPRECATION_WARNINGS, ...). */
const providerPrefixes = ["PULUMI_K8S_"];

export function providerEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const named = new Set([...providerVariables, ...(env["APPSTACK_PROVIDER_ENV"] ?? "").split(",").map((name) => name.trim()).filter(Boolean)]);
  return Object.fromEntries(Object.entries(env).filter(([name]) => named.has(name) || providerPrefixes.some((prefix) => name.startsWith(prefix))));
}

/** How long a new provider has to pass its start check (provider-check.ts): it answers at once when it can. */
const checkTimeoutMs = 10_000;

/** One provider process: its port, and a line to set the environment of the engine it serves next. */
class SlotProvider {
  readonly port: number;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: AsyncIterator<string>;

  private constructor(child: ChildProcessWithoutNullStreams, answers: AsyncIterator<string>, port: number) {
    this.child = child;
    this.answers = answers;
    this.port = port;
  }

  static async start(settings: ProviderSlotSettings, log: Logger): Promise<SlotProvider> {
    // A process group of its own, as Pulumi gives each plugin it starts: a Ctrl-C in the terminal
    // goes to the operator's group, and Go's default for SIGINT is to exit, which cut the
    // operations in flight short (the engine saw its provider's connection reset) when the
    // operator's first Ctrl-C was to let them finish. It still ends with the operator: its
    // standard input closes then (control.go).
    const child = spawn(settings.binary, [], { env: { ...providerEnvironment(process.env), ...settings.env, APPSTACK_PROVIDER_SLOT: "1" }, stdio: ["pipe", "pipe", "pipe"], detached: true });
    // What the provider logs (client-go, klog) went to the engine's output before; it is debug here.
    createInterface({ input: child.stderr }).on("line", (line) => log.debug("kubernetes provider", { pid: child.pid, line }));
    child.on("error", (error) => log.warn("kubernetes provider process failed", { error: error.message }));
    // A write to a provider that died meanwhile fails (EPIPE) on the stream; its answer() then
    // reports the exit, and the stream's error must not be an unhandled one.
    child.stdin.on("error", (error) => log.debug("kubernetes provider's input closed", { pid: child.pid, error: error.message }));
    const answers = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const port = Number(await answer(child, answers, "its port"));
    if (!Number.isInteger(port) || port <= 0) {
      child.kill("SIGKILL");
      throw new Error(`the kubernetes provider printed no port (${port})`);
    }
    const provider = new SlotProvider(child, answers, port);
    await provider.check(settings.binary);
    return provider;
  }

  /** The start check: an empty environment acknowledged on its line, and an engine's Attach accepted. */
  private async check(binary: string): Promise<void> {
    try {
      await this.setEnvironment({}, checkTimeoutMs);
      await attachAccepted(this.port, checkTimeoutMs);
    } catch (error) {
      this.kill();
      throw new SlotProtocolMismatch(binary, error instanceof Error ? error.message : String(error));
    }
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sets the environment of the next engine's provider (undefined unsets), once acknowledged. */
  async setEnvironment(env: Readonly<Record<string, string | undefined>>, timeoutMs = answerTimeoutMs): Promise<void> {
    const line = JSON.stringify(Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value ?? null])));
    this.child.stdin.write(`${line}\n`);
    const reply = await answer(this.child, this.answers, "the operation's environment", timeoutMs);
    if (reply !== "ok") throw new Error(`the kubernetes provider refused the operation's environment: ${reply}`);
  }

  kill(): void {
    this.child.stdin.destroy();
    if (this.alive) this.child.kill("SIGKILL");
  }
}

/** The next line the provider prints, within answerTimeoutMs; the process is killed if none comes. */
async function answer(child: ChildProcessWithoutNullStreams, lines: AsyncIterator<string>, what: string, timeoutMs = answerTimeoutMs): Promise<string> {
  const next = await withinDeadline(lines.next(), timeoutMs);
  if (next === timedOut) {
    child.kill("SIGKILL");
    throw new Error(`the kubernetes provider (pid ${child.pid}) did not answer with ${what} within ${timeoutMs / 1000} s; it was killed`);
  }
  if (next.done) throw new Error(`the kubernetes provider (pid ${child.pid}) exited before answering with ${what} (exit ${child.exitCode ?? child.signalCode})`);
  return next.value;
}

export class ProviderSlots {
  private readonly settings: ProviderSlotSettings;
  private readonly log: Logger;
  /** Idle providers, the most recently used last, each with the timer that ends it. */
  private readonly idle: { provider: SlotProvider; expiry: NodeJS.Timeout }[] = [];
  private readonly busy = new Set<SlotProvider>();
  private closed = false;
  private mismatch: string | undefined;

  constructor(settings: ProviderSlotSettings, log: Logger) {
    this.settings = settings;
    this.log = log;
  }

  /**
   * Runs `operation` with an idle provider attached: `engineEnv` (a workspace's environment) names
   * its port for the engine while it runs, and its KUBECONFIG is the provider's. The provider goes
   * back to the idle ones only if the operation succeeded and the process lives.
   */
  async attached<T>(engineEnv: Record<string, string>, operation: () => Promise<T>): Promise<T> {
    const provider = await this.acquireOrFallBack();
    if (!provider) return operation();
    let healthy = false;
    try {
      await provider.setEnvironment({ KUBECONFIG: engineEnv["KUBECONFIG"] });
      engineEnv["PULUMI_DEBUG_PROVIDERS"] = `kubernetes:${provider.port}`;
      const result = await operation();
      healthy = true;
      return result;
    } finally {
      delete engineEnv["PULUMI_DEBUG_PROVIDERS"];
      this.release(provider, healthy);
    }
  }

  /**
   * An idle or new provider; undefined once a new one has failed its start check: from then on,
   * each operation's engine starts a plugin of its own, as without kept providers. Said once, as
   * a warning: the operator keeps working, at the cost the kept providers saved.
   */
  private async acquireOrFallBack(): Promise<SlotProvider | undefined> {
    if (this.mismatch) return undefined;
    try {
      return await this.acquire();
    } catch (error) {
      if (!(error instanceof SlotProtocolMismatch)) throw error;
      this.mismatch = error.message;
      this.log.warn("kept providers are off", { error: error.message });
      return undefined;
    }
  }

  /** Why kept providers are off (a provider failed its start check), if they are. */
  get fallback(): string | undefined {
    return this.mismatch;
  }

  private async acquire(): Promise<SlotProvider> {
    if (this.closed) throw new Error("the operator is stopping: no provider is started");
    let provider: SlotProvider | undefined;
    while (!provider && this.idle.length > 0) {
      const kept = this.idle.pop()!;
      clearTimeout(kept.expiry);
      if (kept.provider.alive) provider = kept.provider;
    }
    provider ??= await SlotProvider.start(this.settings, this.log);
    this.busy.add(provider);
    return provider;
  }

  private release(provider: SlotProvider, healthy: boolean): void {
    this.busy.delete(provider);
    if (healthy && provider.alive && !this.closed && this.idle.length < this.settings.keep) {
      const entry = { provider, expiry: setTimeout(() => this.expire(entry), this.settings.idleMs ?? defaultIdleMs) };
      entry.expiry.unref();
      this.idle.push(entry);
      return;
    }
    if (!healthy) this.log.debug("replacing the kubernetes provider of a failed operation", { pid: provider.pid });
    provider.kill();
  }

  private expire(entry: (typeof this.idle)[number]): void {
    const at = this.idle.indexOf(entry);
    if (at === -1) return;
    this.idle.splice(at, 1);
    entry.provider.kill();
  }

  /** The processes running now (tests). */
  get pids(): number[] {
    return [...this.idle.map((entry) => entry.provider), ...this.busy].filter((p) => p.alive).map((p) => p.pid!);
  }

  /** Kills every provider process; operations still running fail and start none. */
  close(): void {
    this.closed = true;
    for (const { provider, expiry } of this.idle.splice(0)) {
      clearTimeout(expiry);
      provider.kill();
    }
    for (const provider of this.busy) provider.kill();
  }
}
