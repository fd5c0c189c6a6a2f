// `appstack new kind <Kind> [--group G] [--version V] [--dir DIR]`: kubebuilder's `create api` for
// appstack, a new kind as one file in a kinds folder, from a template (kind-template.ts) that the
// folder's loader loads unedited, with a sample object and a unit test of its component beside it
// in subfolders (kind-sample-templates.ts). It refuses, writing nothing, what the loader or the
// API server would refuse later: a name that is no kind's, a group that is no API group, a name
// another kind has, and a file that is there already.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importKindFolder } from "../../components/kind-files.ts";
import { registeredKinds } from "../../components/kinds.ts";
import { isApiGroup, notApiGroup, type WorkloadDescription } from "../../components/workload.ts";
import { groupOf } from "../../crds/crd.ts";
import { version, type Workload } from "../../crds/types.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { kindFileName, pluralOf, sampleFileName, testFileName, type KindNames } from "./kind-names.ts";
import { kindTestTemplate, sampleTemplate } from "./kind-sample-templates.ts";
import { kindTemplate } from "./kind-template.ts";

export const newUsage = `usage: appstack new kind KIND [--group GROUP] [--version ${version}] [--dir DIR]
  writes DIR/<kind>.ts (DIR: kinds/ by default), a kind file from a template: its spec's fields (image,
  replicas, port) with their docs, defaults, bounds and a CEL rule, and a component that makes a
  Deployment and a ClusterIP Service. Beside it, DIR/samples/<kind>.yaml, an object of the kind, and
  DIR/test/<kind>.test.ts, a unit test of its component on Pulumi's mocks, made from the sample's spec
  (\`node --import tsx --test DIR/test/<kind>.test.ts\`). Run the kind with \`npm start -- --kinds DIR\`
  (docs/writing-a-kind.md).
  KIND      UpperCamelCase letters and digits (Guestbook); its plural is written into the file
  --group   its API group, a DNS subdomain with at least one dot (webapp.example.com); by default the
            group of the kind files already in DIR, if they agree on one
  --version ${version}, the one version appstack serves every kind at (the default)
  It refuses a kind or plural another kind has (a built-in one, or one in DIR), and any of its three files that exists.
  Exit code 0: the files are written; 1: nothing is written (a wrong command line, a refused name or group, a file there already).`;

export const newOptions = { group: { type: "string" }, version: { type: "string" }, dir: { type: "string" } } as const;

/** The folder the kind file goes in, by default: the one `npm start -- --kinds kinds` names. */
export const defaultKindsDir = "kinds";

/**
 * A kind's name: UpperCamelCase letters and digits, and lower-cased a DNS label (the API server's
 * rule for a CRD's kind), which also makes it a class name and a file name.
 */
export const isKindName = (kind: string): boolean => /^[A-Z][A-Za-z0-9]*$/.test(kind) && kind.length <= 63;

/** The API server's rule for a CRD's plural: a DNS label. */
const isPlural = (plural: string): boolean => /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(plural) && plural.length <= 63;

/** The paths `appstack new kind` writes. */
export interface NewKindFiles {
  /** DIR/<kind>.ts, the kind. */
  readonly kind: string;
  /** DIR/samples/<kind>.yaml, an object of it. */
  readonly sample: string;
  /** DIR/test/<kind>.test.ts, a unit test of its component. */
  readonly test: string;
}

/** Writes the kind file, its sample and its test; returns their paths. A refusal throws, writing nothing. */
export async function newKind(argv: readonly string[]): Promise<NewKindFiles> {
  const { values, positionals } = parseCommandLine(argv, newOptions, newUsage);
  if (positionals[0] !== "kind" || positionals.length !== 2) throw new UsageError(`appstack new makes a kind: appstack new kind KIND\n${newUsage}`);
  const kind = positionals[1]!;
  if (!isKindName(kind)) throw new UsageError(`appstack new kind: ${JSON.stringify(kind)} is not a kind's name: UpperCamelCase letters and digits, at most 63, starting with a capital letter (Guestbook)\n${newUsage}`);
  if (values.version !== undefined && values.version !== version) {
    throw new UsageError(`appstack new kind: --version ${values.version}: appstack serves every kind at ${version}, and at no other version yet\n${newUsage}`);
  }
  if (values.group !== undefined && !isApiGroup(values.group)) throw new UsageError(`appstack new kind: --group ${JSON.stringify(values.group)} ${notApiGroup}\n${newUsage}`);
  const dir = resolve(values.dir ?? defaultKindsDir);
  const files: NewKindFiles = { kind: join(dir, kindFileName(kind)), sample: join(dir, sampleFileName(kind)), test: join(dir, testFileName(kind)) };
  const there = [files.kind, files.sample, files.test].find((file) => existsSync(file));
  if (there) throw new Error(`appstack new kind: ${there} exists already; nothing is written (remove it, or name another kind)`);
  const plural = pluralOf(kind);
  if (!isPlural(plural)) throw new Error(`appstack new kind: its plural ${plural} is not a resource's name: a DNS label of at most 63`);
  // The folder's kinds, imported and not registered: the group they agree on, the names they have.
  const existing = existsSync(dir) ? (await importKindFolder(dir)).kinds.map(({ definition }) => definition) : [];
  const names = { kind, plural, group: values.group ?? groupOfFolder(dir, existing) };
  refuseTaken(names, existing);
  // "wx": a file made meanwhile is refused, not overwritten.
  for (const [file, text] of [[files.kind, kindTemplate(names)], [files.sample, sampleTemplate(names)], [files.test, kindTestTemplate(names)]] as const) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text, { flag: "wx" });
  }
  return files;
}

/** The group the kinds in `dir` agree on; refused when they name none or several. */
function groupOfFolder(dir: string, existing: readonly WorkloadDescription<Workload>[]): string {
  const groups = [...new Set(existing.map((definition) => groupOf(definition.api)))];
  if (groups.length === 1) return groups[0]!;
  const found = groups.length ? `the kind files in ${dir} are of several groups (${groups.join(", ")})` : `no kind file in ${dir} gives one`;
  throw new UsageError(`appstack new kind: name its API group with --group (webapp.example.com): ${found}\n${newUsage}`);
}

/** Refuses a kind or plural that a registered kind (App's, Memcached's) or a kind in its folder has: the loader would refuse the file. */
function refuseTaken({ kind, plural }: KindNames, existing: readonly WorkloadDescription<Workload>[]): void {
  const names = ({ api }: WorkloadDescription<Workload>) => [api.kind.toLowerCase(), api.plural, ...(api.shortNames ?? [])];
  const taken = [...registeredKinds(), ...existing].find((other) => names(other).some((name) => name === kind.toLowerCase() || name === plural));
  if (taken) throw new Error(`appstack new kind: ${kind} (plural ${plural}) is ${taken.api.kind}'s name already: kind names and plurals are unique across all kinds, whatever their groups`);
}

/** The verb: says what it wrote and how to run it; a refusal exits 1 with its message. */
export async function runNewCli(argv: readonly string[]): Promise<void> {
  const files = await newKind(argv);
  const shown = (file: string) => relative(process.cwd(), file) || file;
  const dir = relative(process.cwd(), dirname(files.kind)) || ".";
  console.error(`wrote ${shown(files.kind)}: run it with \`npm start -- --kinds ${dir}\`, render its install with \`appstack manifests --passphrase-secret NAME --kinds ${dir}\``);
  console.error(`wrote ${shown(files.sample)}: an object of it, to \`kubectl apply -f\``);
  console.error(`wrote ${shown(files.test)}: a unit test of its component, made from the sample's spec: \`node --import tsx --test ${shown(files.test)}\``);
}
