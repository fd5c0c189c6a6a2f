// The DIY backends' checkpoints (file and postgres: state-store.ts), read directly: what a stack's
// state records and whether it carries pending operations, each known without a Pulumi process;
// for the file backend also whether a stack exists.
import { join } from "node:path";
import { childKindOfType } from "../../components/kinds.ts";
import { fileBackendRoot } from "./engine.ts";
import { projectName } from "./stack-names.ts";
import type { StateIo } from "./state-io.ts";
import { stateStore, type StateStore } from "./state-store.ts";

/** A child of an object as a stack's state records it. */
export interface RecordedChild {
  /** Its kind of child, by name (components/kinds.ts). */
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** A resource of a stack's state, as far as appstack reads it. */
export interface StateResource {
  readonly type: string;
  /** For a Kubernetes resource, `<namespace>/<name>`. */
  readonly id?: string;
}

/**
 * A stack's deployment as the file backend's checkpoint holds it (`checkpoint.latest`) and as
 * `stack export` returns it (`deployment`): the parts appstack reads or changes. Pulumi does not
 * document the layout; the tests run the pinned CLI against it (new-stacks.test.ts, trust.test.ts).
 */
export interface StateDeployment {
  manifest?: { time?: string };
  resources?: StateResource[];
  pending_operations?: unknown[];
}

/** The file backend's checkpoint file, `stacks/<project>/<stack>.json`. */
export interface CheckpointFile {
  checkpoint: { stack: string; latest?: StateDeployment };
}

export function parseCheckpoint(text: string): CheckpointFile {
  return JSON.parse(text) as CheckpointFile;
}

/** The deployment of a `stack export` (the SDK types it `any`). */
export function exportedDeployment(state: { readonly deployment?: unknown }): StateDeployment | undefined {
  return state.deployment as StateDeployment | undefined;
}

export function childrenIn(resources: readonly StateResource[]): RecordedChild[] {
  return resources.flatMap((resource) => {
    const kind = childKindOfType(resource.type)?.kind;
    const [namespace, name] = (resource.id ?? "").split("/");
    return kind && namespace && name ? [{ kind, namespace, name }] : [];
  });
}

export class Checkpoints {
  private readonly backendUrl: string;
  private readonly io: StateIo;
  private readonly store: StateStore | undefined;

  constructor(backendUrl: string, io: StateIo) {
    this.backendUrl = backendUrl;
    this.io = io;
    this.store = stateStore(backendUrl, io);
  }

  /** The store's key of a stack's checkpoint, without its suffix. */
  private key(name: string): string {
    return `.pulumi/stacks/${projectName}/${name}`;
  }

  /** Where a file backend keeps a stack's checkpoint (without its suffix); undefined for other backends. */
  base(name: string): string | undefined {
    const backend = fileBackendRoot(this.backendUrl);
    return backend && join(backend, "stacks", projectName, name);
  }

  /** Whether the file backend holds the stack of the checkpoint `base`, in any of its files. */
  async exists(base: string): Promise<boolean> {
    for (const suffix of [".json", ".json.gz", ".json.attrs"]) if (await this.io.exists(`${base}${suffix}`)) return true;
    return false;
  }

  /**
   * Whether the backend's store holds the stack's checkpoint (plain or compressed); undefined where
   * it is not read directly. On PostgreSQL this is one row's read where `pulumi stack ls` would read
   * every stack (and Pulumi 3.259's, reading ten at once, does not finish on a table of five or more).
   */
  async stored(name: string): Promise<boolean | undefined> {
    if (!this.store) return undefined;
    for (const suffix of [".json", ".json.gz"]) if ((await this.store.read(`${this.key(name)}${suffix}`)) !== undefined) return true;
    return false;
  }

  /** Whether the stack's checkpoint records resources (a stack a preview made records none); undefined where not read directly. */
  async recordsResources(name: string): Promise<boolean | undefined> {
    if (!this.store) return undefined;
    const checkpoint = await this.file(name);
    if (!checkpoint) return (await this.store.read(`${this.key(name)}.json.gz`)) !== undefined;
    return (checkpoint.latest?.resources ?? []).some((resource) => !resource.type.startsWith("pulumi:"));
  }

  /** The children the stack's checkpoint records; undefined when it is not read directly (other backends, a compressed one). */
  async recordedChildren(name: string): Promise<RecordedChild[] | undefined> {
    if (!this.store) return undefined;
    const checkpoint = await this.file(name);
    if (checkpoint) return childrenIn(checkpoint.latest?.resources ?? []);
    // Compressed (PULUMI_DIY_BACKEND_GZIP): only the engine reads it.
    return (await this.store.read(`${this.key(name)}.json.gz`)) === undefined ? [] : undefined;
  }

  /** The stack's checkpoint, read directly (one read, no check first); undefined when it is absent (or compressed) or not read directly. */
  async file(name: string): Promise<CheckpointFile["checkpoint"] | undefined> {
    const text = await this.text(name);
    if (text === undefined) return undefined;
    return parseCheckpoint(text).checkpoint;
  }

  /** The stack's checkpoint as stored; undefined when it is absent (or compressed) or not read directly. */
  text(name: string): Promise<string | undefined> {
    return this.store?.read(`${this.key(name)}.json`) ?? Promise.resolve(undefined);
  }

  /**
   * A new stack's checkpoint, `text`, written where none is in a store that can do so in one step
   * (PostgreSQL's insert); whether it wrote. Undefined where the store cannot: the file backend's
   * new checkpoints are written as files (new-stacks.ts), other backends' through Pulumi.
   */
  async create(name: string, text: string): Promise<boolean | undefined> {
    return this.store?.create?.(`${this.key(name)}.json`, text);
  }
}
