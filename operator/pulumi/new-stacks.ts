// New stacks of the file backend, made without a Pulumi process. `pulumi stack init` is a whole CLI
// process that writes two small files: the stack's checkpoint, which holds no resources yet and
// the secrets provider's state (its URL and the stack's data key, wrapped by the key service),
// and its settings file beside Pulumi.yaml, which holds the same. So the first new stack of a
// workspace is made by `stack init`, and its two files as Pulumi wrote them become the template of
// every later one, which differs only in its name and time. Every stack then shares one data key:
// they already share one passphrase, and AES-GCM's random nonces keep reuse of a key safe. A
// template of another secrets provider (the passphrase provider, before the key service) is not
// used: the next `stack init` replaces it. Neither file's layout is documented by Pulumi:
// test/unit/new-stacks.test.ts runs the pinned CLI on a stack made here (select, up with a
// secret, export), so an upgrade that changes them fails there.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import yaml from "js-yaml";

export interface NewStackTemplate {
  /** The checkpoint `stack init` wrote, as JSON. */
  readonly checkpoint: string;
  /** The stack's settings file (Pulumi.<stack>.yaml) `stack init` wrote. */
  readonly settings: string;
}

interface CheckpointFile {
  checkpoint: { stack: string; latest?: { manifest?: { time?: string }; resources?: unknown[] } };
}

const templateFile = (workDir: string) => join(workDir, "new-stack-template.json");

/** The settings file of `stack` in the workspace, where `stack init` writes it. */
export const stackSettingsFile = (workDir: string, stack: string) => join(workDir, `Pulumi.${stack}.yaml`);

function writeAtomically(path: string, content: string): void {
  const partial = `${path}.${process.pid}.partial`;
  try {
    writeFileSync(partial, content);
    renameSync(partial, path);
  } catch (error) {
    rmSync(partial, { force: true }); // a full disk: nothing half-written stays behind
    throw error;
  }
}

/** The template the workspace keeps, if any, for stacks whose secrets provider is `secretsProvider`. */
export function loadTemplate(workDir: string, secretsProvider: string): NewStackTemplate | undefined {
  if (!existsSync(templateFile(workDir))) return undefined;
  try {
    const template = JSON.parse(readFileSync(templateFile(workDir), "utf8")) as NewStackTemplate;
    const settings = yaml.load(template.settings) as { secretsprovider?: string } | null;
    return settings?.secretsprovider === secretsProvider ? template : undefined;
  } catch {
    return undefined; // torn by a kill: the next `stack init` writes it again
  }
}

/**
 * Keeps the files `stack init` just wrote for `stack` (before any operation on it) as the
 * template of new stacks; returns it, or undefined when they are not what a new stack looks like.
 */
export function saveTemplate(workDir: string, checkpointPath: string, stack: string): NewStackTemplate | undefined {
  const checkpoint = readFileSync(checkpointPath, "utf8");
  const parsed = JSON.parse(checkpoint) as CheckpointFile;
  if (!parsed.checkpoint.stack.endsWith(`/${stack}`) || parsed.checkpoint.latest?.resources?.length) return undefined;
  const template = { checkpoint, settings: readFileSync(stackSettingsFile(workDir, stack), "utf8") };
  writeAtomically(templateFile(workDir), JSON.stringify(template));
  return template;
}

/**
 * Writes the settings file and then the checkpoint of a new stack `stack` from `template`; the
 * checkpoint is what makes the stack exist, so a kill in between leaves a stack still to make.
 */
export function createFromTemplate(template: NewStackTemplate, workDir: string, checkpointPath: string, stack: string): void {
  const parsed = JSON.parse(template.checkpoint) as CheckpointFile;
  parsed.checkpoint.stack = parsed.checkpoint.stack.replace(/[^/]+$/, stack);
  if (parsed.checkpoint.latest?.manifest) parsed.checkpoint.latest.manifest.time = new Date().toISOString();
  writeAtomically(stackSettingsFile(workDir, stack), template.settings);
  writeAtomically(checkpointPath, JSON.stringify(parsed));
}
