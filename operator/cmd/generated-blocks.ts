// Reference tables generated from the code into the pages: each lives between two marker comments
// of its page, a script writes it (`node --import tsx <script> --write`), and a unit test fails
// when the page's block is not what the script generates now. Used by options-reference.ts,
// metrics-reference.ts and reasons-reference.ts.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../toolchain/tools.ts";

export interface GeneratedBlock {
  /** The page, relative to the repository's root. */
  readonly page: string;
  readonly beginMarker: string;
  readonly endMarker: string;
  /** The block's Markdown as the code gives it now. */
  readonly generate: () => string;
}

/** The text of `page` between the block's markers, trimmed; undefined without them. */
export function blockText(page: string, block: Pick<GeneratedBlock, "beginMarker" | "endMarker">): string | undefined {
  const begin = page.indexOf(block.beginMarker);
  const end = page.indexOf(block.endMarker);
  if (begin < 0 || end < begin) return undefined;
  return page.slice(begin + block.beginMarker.length, end).trim();
}

/** Writes the block, generated now, between its page's markers. */
export function writeBlock(block: GeneratedBlock): void {
  const path = join(repoRoot, block.page);
  const page = readFileSync(path, "utf8");
  const begin = page.indexOf(block.beginMarker);
  const end = page.indexOf(block.endMarker);
  if (begin < 0 || end < begin) throw new Error(`${block.page} has no markers`);
  writeFileSync(path, `${page.slice(0, begin + block.beginMarker.length)}\n\n${block.generate()}\n\n${page.slice(end)}`);
}

/** A Markdown table cell: no pipe or line break of its own. */
export const markdownCell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** A Markdown table. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((row) => `| ${row.map(markdownCell).join(" | ")} |`)].join("\n");
}

/** Whether this process runs `script` with `--write` (the generator's command line). */
export const runAsWriter = (script: string): boolean => (process.argv[1]?.endsWith(script) ?? false) && process.argv.includes("--write");
