// New stacks of the file and PostgreSQL backends, made without a Pulumi process. `pulumi stack init` is a whole CLI
// process that writes two small files: the stack's checkpoint, which holds no resources yet and
// the secrets provider's state (its URL and the stack's data key, wrapped by the key service),
// and its settings file beside Pulumi.yaml, which holds the same. So the first new stack of a
// workspace is made by `stack init`, and its two files as Pulumi wrote them become the template of
// every later one, which differs only in its name and time (on PostgreSQL the checkpoint is the
// stack's row, inserted only where none is). Every stack then shares one data key:
// they already share one passphrase, and AES-GCM's random nonces keep reuse of a key safe. A
// template of another secrets provider (the passphrase provider, before the key service) is not
// used: the next `stack init` replaces it. Neither file's layout is documented by Pulumi:
// test/unit/new-stacks.test.ts runs the pinned CLI on a stack made here (select, up with a
// secret, export), so an upgrade that changes them fails there.
import { join } from "node:path";
import yaml from "js-yaml";
import { parseCheckpoint } from "./checkpoints.ts";
import { StateFolderUnanswered, type StateIo } from "./state-io.ts";

export interface NewStackTemplate {
  /** The checkpoint `stack init` wrote, as JSON. */
  readonly checkpoint: string;
  /** The stack's settings file (Pulumi.<stack>.yaml) `stack init` wrote. */
  readonly settings: string;
}

const templateFile = (workDir: string) => join(workDir, "new-stack-template.json");

/** The settings file of `stack` in the workspace, where `stack init` writes it. */
export const stackSettingsFile = (workDir: string, stack: string) => join(workDir, `Pulumi.${stack}.yaml`);

async function writeAtomically(path: string, content: string, io: StateIo): Promise<void> {
  const partial = `${path}.${process.pid}.partial`;
  try {
    await io.write(partial, content);
    await io.rename(partial, path);
  } catch (error) {
    // A full disk: nothing half-written stays behind. A folder that does not answer is not asked again.
    if (!(error instanceof StateFolderUnanswered)) await io.remove(partial);
    throw error;
  }
}

/** The template the workspace keeps, if any, for stacks whose secrets provider is `secretsProvider`. */
export async function loadTemplate(workDir: string, secretsProvider: string, io: StateIo): Promise<NewStackTemplate | undefined> {
  try {
    const text = await io.readTextIfAny(templateFile(workDir));
    if (text === undefined) return undefined;
    const template = JSON.parse(text) as NewStackTemplate;
    const settings = yaml.load(template.settings) as { secretsprovider?: string } | null;
    return settings?.secretsprovider === secretsProvider ? template : undefined;
  } catch (error) {
    if (error instanceof StateFolderUnanswered) throw error;
    return undefined; // torn by a kill: the next `stack init` writes it again
  }
}

/**
 * Keeps what `stack init` just wrote for `stack` (before any operation on it), its `checkpoint`
 * and its settings file, as the template of new stacks; returns it, or undefined when they are not
 * what a new stack looks like.
 */
export async function saveTemplate(workDir: string, checkpoint: string, stack: string, io: StateIo): Promise<NewStackTemplate | undefined> {
  const parsed = parseCheckpoint(checkpoint);
  if (!parsed.checkpoint.stack.endsWith(`/${stack}`) || parsed.checkpoint.latest?.resources?.length) return undefined;
  const template = { checkpoint, settings: await io.readText(stackSettingsFile(workDir, stack)) };
  await writeAtomically(templateFile(workDir), JSON.stringify(template), io);
  return template;
}

/** Writes a new stack's checkpoint; false when a stack of that name turned out to exist (nothing written). */
export type CheckpointWriter = (checkpoint: string) => Promise<boolean>;

/** The file backend's: the checkpoint's file, renamed into place. */
export function checkpointFile(path: string, io: StateIo): CheckpointWriter {
  return async (checkpoint) => {
    await writeAtomically(path, checkpoint, io);
    return true;
  };
}

/**
 * Writes the settings file and then the checkpoint of a new stack `stack` from `template`; the
 * checkpoint is what makes the stack exist, so a kill in between leaves a stack still to make.
 * Whether it made the stack (`writeCheckpoint` found none there).
 */
export async function createFromTemplate(template: NewStackTemplate, workDir: string, stack: string, io: StateIo, writeCheckpoint: CheckpointWriter): Promise<boolean> {
  const parsed = parseCheckpoint(template.checkpoint);
  parsed.checkpoint.stack = parsed.checkpoint.stack.replace(/[^/]+$/, stack);
  if (parsed.checkpoint.latest?.manifest) parsed.checkpoint.latest.manifest.time = new Date().toISOString();
  await writeAtomically(stackSettingsFile(workDir, stack), template.settings, io);
  return writeCheckpoint(JSON.stringify(parsed));
}
