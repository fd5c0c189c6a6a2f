// `appstack new kind <Kind> [--group G] [--version V] [--dir DIR]`: kubebuilder's `create api` for
// appstack, a new kind as one file in a kinds folder, from a template (kind-template.ts) that the
// folder's loader loads unedited. It refuses, writing nothing, what the loader or the API server
// would refuse later: a name that is no kind's, a group that is no API group, a name another kind
// has, and a file that is there already.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importKindFolder } from "../../components/kind-files.ts";
import { registeredKinds } from "../../components/kinds.ts";
import { isApiGroup, notApiGroup, type WorkloadDescription } from "../../components/workload.ts";
import { groupOf } from "../../crds/crd.ts";
import { version, type Workload } from "../../crds/types.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { kindFileName, kindTemplate, pluralOf, type KindNames } from "./kind-template.ts";

export const newUsage = `usage: appstack new kind KIND [--group GROUP] [--version ${version}] [--dir DIR]
  writes DIR/<kind>.ts (DIR: kinds/ by default), a kind file from a template: its spec's fields (image,
  replicas, port) with their docs, defaults, bounds and a CEL rule, and a component that makes a
  Deployment and a ClusterIP Service. Run it with \`npm start -- --kinds DIR\` (docs/writing-a-kind.md).
  KIND      UpperCamelCase letters and digits (Guestbook); its plural is written into the file
  --group   its API group, a DNS subdomain with at least one dot (webapp.example.com); by default the
            group of the kind files already in DIR, if they agree on one
  --version ${version}, the one version appstack serves every kind at (the default)
  It refuses a kind or plural another kind has (a built-in one, or one in DIR), and a file that exists.
  Exit code 0: the file is written; 1: nothing is written (a wrong command line, a refused name or group, a file there already).`;

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

/** Writes the kind file; returns the path written. A refusal throws, writing nothing. */
export async function newKind(argv: readonly string[]): Promise<string> {
  const { values, positionals } = parseCommandLine(argv, newOptions, newUsage);
  if (positionals[0] !== "kind" || positionals.length !== 2) throw new UsageError(`appstack new makes a kind: appstack new kind KIND\n${newUsage}`);
  const kind = positionals[1]!;
  if (!isKindName(kind)) throw new UsageError(`appstack new kind: ${JSON.stringify(kind)} is not a kind's name: UpperCamelCase letters and digits, at most 63, starting with a capital letter (Guestbook)\n${newUsage}`);
  if (values.version !== undefined && values.version !== version) {
    throw new UsageError(`appstack new kind: --version ${values.version}: appstack serves every kind at ${version}, and at no other version yet\n${newUsage}`);
  }
  if (values.group !== undefined && !isApiGroup(values.group)) throw new UsageError(`appstack new kind: --group ${JSON.stringify(values.group)} ${notApiGroup}\n${newUsage}`);
  const dir = resolve(values.dir ?? defaultKindsDir);
  const file = join(dir, kindFileName(kind));
  if (existsSync(file)) throw new Error(`appstack new kind: ${file} exists already; nothing is written (remove it, or name another kind)`);
  const plural = pluralOf(kind);
  if (!isPlural(plural)) throw new Error(`appstack new kind: its plural ${plural} is not a resource's name: a DNS label of at most 63`);
  // The folder's kinds, imported and not registered: the group they agree on, the names they have.
  const existing = existsSync(dir) ? (await importKindFolder(dir)).kinds.map(({ definition }) => definition) : [];
  const names = { kind, plural, group: values.group ?? groupOfFolder(dir, existing) };
  refuseTaken(names, existing);
  mkdirSync(dir, { recursive: true });
  // "wx": a file made meanwhile is refused, not overwritten.
  writeFileSync(file, kindTemplate(names), { flag: "wx" });
  return file;
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
  const file = await newKind(argv);
  const dir = relative(process.cwd(), dirname(file)) || ".";
  console.error(`wrote ${relative(process.cwd(), file) || file}: run it with \`npm start -- --kinds ${dir}\`, render its install with \`appstack manifests --passphrase-secret NAME --kinds ${dir}\``);
}
