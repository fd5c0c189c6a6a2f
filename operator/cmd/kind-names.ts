// The names `appstack new kind` fills its templates in with (kind-template.ts,
// kind-sample-templates.ts), the files it writes them to in the kinds folder, and the example
// docs/writing-a-kind.md walks through.

/** What the templates are filled in with. */
export interface KindNames {
  /** The kind, UpperCamelCase: Guestbook. */
  readonly kind: string;
  /** Its API group, a DNS subdomain with at least one dot: webapp.example.com. */
  readonly group: string;
  /** Its plural, lower case: guestbooks. */
  readonly plural: string;
}

/**
 * The plural of a kind, as its resource's name: lower case, English's regular rules (a policy, two
 * policies; a box, two boxes). Hand-written rather than a pluralizing library's guess at irregular
 * words: the plural is written into the file, where its author changes it if English disagrees.
 */
export function pluralOf(kind: string): string {
  const lower = kind.toLowerCase();
  if (/[^aeiou]y$/.test(lower)) return `${lower.slice(0, -1)}ies`;
  if (/(s|x|z|ch|sh)$/.test(lower)) return `${lower}es`;
  return `${lower}s`;
}

/** The kind file's path in its folder: guestbook.ts. Only `*.ts` files at the folder's top are kind files (components/kind-files.ts). */
export const kindFileName = (kind: string): string => `${kind.toLowerCase()}.ts`;

/** The sample's path in the kinds folder: samples/guestbook.yaml. */
export const sampleFileName = (kind: string): string => `samples/${kind.toLowerCase()}.yaml`;

/** The test's path in the kinds folder, in a subfolder the loader does not read: test/guestbook.test.ts. */
export const testFileName = (kind: string): string => `test/${kind.toLowerCase()}.test.ts`;

/** The example docs/writing-a-kind.md walks through: kubebuilder's quick start's kind. */
export const exampleKind: KindNames = { kind: "Guestbook", group: "webapp.example.com", plural: pluralOf("Guestbook") };
