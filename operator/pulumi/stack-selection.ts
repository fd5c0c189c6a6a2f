// Selecting and creating stacks: each stack selected once per process, a new one of the file or
// PostgreSQL backend made from the template of new stacks, and the shared work folder their
// workspaces use.
import { LocalWorkspace, StackAlreadyExistsError, StackNotFoundError, type PulumiFn, Stack } from "@pulumi/pulumi/automation/index.js";
import { join } from "node:path";
import yaml from "js-yaml";
import type { StackOperation } from "../../crds/types.ts";
import type { Logger } from "../base/log.ts";
import type { Checkpoints } from "./checkpoints.ts";
import type { DeadlineRunner } from "./deadline-runner.ts";
import { forgetPulumiCommand, workspaceOptions, type EngineSettings } from "./engine.ts";
import { secretsProviderUrl } from "./key-service.ts";
import { checkpointFile, createFromTemplate, loadTemplate, saveTemplate, type CheckpointWriter } from "./new-stacks.ts";
import { killEngines } from "./orphans.ts";
import type { PendingOperations } from "./pending-operations.ts";
import type { Recovery } from "./recovery.ts";
import { projectName } from "./stack-names.ts";
import type { StateIo } from "./state-io.ts";
import { answerFromEvents } from "./summaries.ts";

/** The stack the template of new stacks is made from: no object's (theirs are `<kind>.<namespace>.<name>`). */
const templateStackName = "appstack-new-stack-template";

/**
 * A work folder stacks can share: Pulumi.yaml is written once here, never per operation. It names
 * no backend: the URL may carry a password, and reaches the engines only through their environment
 * (PULUMI_BACKEND_URL, engine.ts), never a file. Written afresh, so an earlier version's copy with
 * the URL goes.
 */
export async function prepareWorkDir(workDir: string, io: StateIo): Promise<string> {
  await io.makeFolder(workDir);
  await io.write(join(workDir, "Pulumi.yaml"), yaml.dump({ name: projectName, runtime: "nodejs" }));
  return workDir;
}

export type SelectionSettings = EngineSettings & { readonly workDir: string };

/** What selecting a stack uses of the stack driver's other parts. */
export interface SelectionParts {
  readonly log: Logger;
  readonly io: StateIo;
  readonly checkpoints: Checkpoints;
  readonly pending: PendingOperations;
  readonly recovery: Recovery;
  readonly deadlines: DeadlineRunner;
}

export class StackSelection {
  /** Stacks selected once in this process: selecting again would start a Pulumi process per operation. */
  private readonly stacks = new Map<string, Stack>();

  private readonly settings: SelectionSettings;
  private readonly parts: SelectionParts;

  constructor(settings: SelectionSettings, parts: SelectionParts) {
    this.settings = settings;
    this.parts = parts;
  }

  /**
   * The workspace of a command of `kind`. The first call of a process checks the CLI (`pulumi
   * version`), which a stalled disk can hold as long as any other command: within the deadline too.
   */
  async workspace(kind: StackOperation["kind"]) {
    // The shared work folder already holds Pulumi.yaml: not passing project settings keeps
    // parallel operations from rewriting it under each other.
    const killCheck = async () => {
      forgetPulumiCommand(this.settings.binaries.cliRoot);
      await killEngines("version", "pulumi version did not finish within its deadline", this.parts.log);
    };
    const { projectSettings, ...options } = await this.parts.deadlines.command(kind, undefined, "version", () => workspaceOptions(this.settings, projectName, this.parts.io), killCheck);
    return { ...options, workDir: this.settings.workDir };
  }

  async select(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const cached = this.stacks.get(name);
    if (cached) {
      (cached.workspace as LocalWorkspace).program = program;
      return cached;
    }
    try {
      return await this.selectAfresh(name, program, kind);
    } catch (error) {
      throw await this.parts.recovery.afterFailure(name, error);
    }
  }

  /** The stack is gone from the backend, or may be: select (or create) it afresh next time. */
  deselect(name: string): void {
    this.stacks.delete(name);
  }

  /**
   * Where the backend is read directly (its files, PostgreSQL's rows), whether the stack exists is
   * known without a Pulumi process: an existing stack is used without `stack select`, a new one is
   * made from the template. Elsewhere Pulumi decides.
   */
  private async selectAfresh(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const known = await this.known(name);
    let stack: Stack;
    if (known === undefined) {
      const workspace = await this.workspace(kind);
      stack = await this.parts.deadlines.command(kind, name, "stack select", () => LocalWorkspace.createOrSelectStack({ stackName: name, projectName, program }, workspace));
    } else if (known) stack = await this.selectKnown(name, program, kind);
    else stack = await this.createNew(name, program, kind);
    this.stacks.set(name, answerFromEvents(stack));
    return stack;
  }

  /** Whether the backend holds the stack, read directly; undefined where it is not read directly. */
  private async known(name: string): Promise<boolean | undefined> {
    const base = this.parts.checkpoints.base(name);
    return base ? this.parts.checkpoints.exists(base) : this.parts.checkpoints.stored(name);
  }

  /** Writes a new stack's checkpoint: the file backend's as a file, a store's as a row where none is. */
  private checkpointWriter(name: string): CheckpointWriter {
    const base = this.parts.checkpoints.base(name);
    if (base) return checkpointFile(`${base}.json`, this.parts.io);
    return async (checkpoint) => {
      const made = await this.parts.checkpoints.create(name, checkpoint);
      if (made === undefined) throw new Error("this backend's new stacks are made by Pulumi only");
      return made;
    };
  }

  /**
   * A stack known to be new: made from the template (no Pulumi process) once the first one made by
   * `stack init` gave it, with no pending operations. One that turns out to exist is selected.
   */
  private async createNew(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const template = await loadTemplate(this.settings.workDir, secretsProviderUrl, this.parts.io);
    if (template) {
      if (await createFromTemplate(template, this.settings.workDir, name, this.parts.io, this.checkpointWriter(name))) this.parts.pending.markClean(name);
      return this.selectKnown(name, program, kind);
    }
    const args = { stackName: name, projectName, program };
    const workspace = await this.workspace(kind);
    try {
      const stack = await this.parts.deadlines.command(kind, name, "stack init", () => LocalWorkspace.createStack(args, workspace));
      this.parts.pending.markClean(name);
      await this.keepAsTemplate(name);
      return stack;
    } catch (error) {
      // Stored under a layout the file check does not know: it exists after all.
      if (!(error instanceof StackAlreadyExistsError)) throw error;
      return this.parts.deadlines.command(kind, name, "stack select", () => LocalWorkspace.selectStack(args, workspace));
    }
  }

  private async keepAsTemplate(name: string): Promise<void> {
    try {
      const checkpoint = await this.parts.checkpoints.text(name);
      if (checkpoint === undefined || !(await saveTemplate(this.settings.workDir, checkpoint, name, this.parts.io))) this.parts.log.warn("a new stack's files are not what appstack expects: every new stack costs a `pulumi stack init`", { stack: name });
    } catch (error) {
      this.parts.log.warn("could not keep a new stack's files as the template of new stacks", { stack: name, error: String(error) });
    }
  }

  /**
   * A stack the backend was read to hold: `pulumi stack select` would spend a process only to say
   * so again, and every operation names its stack (`--stack`) anyway.
   */
  private async selectKnown(name: string, program: PulumiFn, kind: StackOperation["kind"]): Promise<Stack> {
    const workspace = await LocalWorkspace.create({ ...(await this.workspace(kind)), program });
    workspace.selectStack = () => Promise.resolve();
    return Stack.select(name, workspace);
  }

  /** The stack for an operation that runs no program (destroy, state edits); undefined when it does not exist. */
  async existing(name: string): Promise<Stack | undefined> {
    try {
      const cached = this.stacks.get(name);
      if (cached) return cached;
      const program = () => Promise.resolve();
      const known = await this.known(name);
      if (known === undefined) {
        const workspace = await this.workspace("destroy");
        return answerFromEvents(await this.parts.deadlines.command("destroy", name, "stack select", () => LocalWorkspace.selectStack({ stackName: name, projectName, program }, workspace)));
      }
      return known ? answerFromEvents(await this.selectKnown(name, program, "destroy")) : undefined;
    } catch (error) {
      if (!(error instanceof StackNotFoundError)) throw await this.parts.recovery.afterFailure(name, error);
      return undefined;
    }
  }

  /** Whether the stack exists; cheap (no Pulumi process) for the file and PostgreSQL backends. */
  async exists(name: string): Promise<boolean> {
    const known = await this.known(name);
    if (known !== undefined) return known;
    const ws = await LocalWorkspace.create(await this.workspace("destroy"));
    // Any `stack ls` of this process past one's deadline is on the same unanswering backend.
    const kill = async () => void (await killEngines("ls", "pulumi stack ls did not finish within its deadline", this.parts.log));
    return (await this.parts.deadlines.command("destroy", undefined, "stack ls", () => ws.listStacks(), kill)).some((stack) => stack.name === name);
  }

  /**
   * Readies, before any object is reconciled, what the first operations would otherwise wait for:
   * the CLI's version check, the key service and, on a file backend that has none yet, the
   * template of new stacks, made by `stack init` of a stack of its own that is removed again
   * (measured by hand: the first two new Apps took 1.6 s where later ones took 0.6 s). A failure
   * only leaves that work to the first new stack, so it is logged, not thrown.
   */
  async warmUp(): Promise<void> {
    const name = templateStackName;
    try {
      const workspace = await this.workspace("up");
      if ((await this.known(name)) === undefined || (await loadTemplate(this.settings.workDir, secretsProviderUrl, this.parts.io))) return;
      // Left over if a kill came between its init and its removal: made again from scratch. Replicas
      // that share a backend may warm up at once on this one stack: the one whose removal comes
      // second, or whose read finds it gone, only logs, and its first new stack makes the template.
      const stack = await this.parts.deadlines.command("up", name, "stack init", () => LocalWorkspace.createOrSelectStack({ stackName: name, projectName, program: () => Promise.resolve() }, workspace));
      await this.keepAsTemplate(name);
      await this.parts.deadlines.command("up", name, "stack rm", () => stack.workspace.removeStack(name));
    } catch (error) {
      this.parts.log.warn("could not make the template of new stacks ahead of time", { error: String(error) });
    }
  }
}
