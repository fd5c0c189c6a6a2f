// Relative links in Markdown pages, and whether each leads somewhere: to a file that exists and,
// with a #fragment into a Markdown page, to one of that page's headings as GitHub anchors them.
// Enough Markdown for this repository's pages: fenced code and code spans are not text, headings
// are ATX (`## Title`), links are inline (`[text](target)`) or reference definitions.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, relative, resolve } from "node:path";

export interface MarkdownLink {
  /** The page the link is in, as given to brokenLinks. */
  readonly file: string;
  /** The target as written: path, #fragment or both. */
  readonly target: string;
}

export interface BrokenLink extends MarkdownLink {
  readonly problem: string;
}

/** The page's lines with fenced code blocks blanked (line numbers kept). */
function withoutFencedCode(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split("\n").map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) {
      fence = marker;
      return "";
    }
    if (fence !== undefined) {
      // A fence closes with the same character, at least as long, and nothing after it.
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      return "";
    }
    return line;
  });
}

/** Code spans replaced by a placeholder: a link written inside backticks is an example, not a link. */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1/g, "code");
}

/**
 * GitHub's anchor for a heading: the rendered text lower-cased, every character that is not a
 * letter, digit, mark, space, '-' or '_' removed, and each space turned into '-'.
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link or image keeps its text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/[`*]/g, ""); // code and emphasis markers
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a page has: its headings' (a repeated one gets -1, -2, ...) and explicit HTML ids. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFencedCode(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*(?:name|id)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

/** The targets of the page's links that stay inside the repository (no scheme, not protocol-relative). */
export function relativeLinkTargets(markdown: string): string[] {
  const text = withoutCodeSpans(withoutFencedCode(markdown).join("\n"));
  const inline = [...text.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  return [...inline, ...definitions].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("//"));
}

/**
 * The links of `files` (paths relative to `root`) that point at nothing: a missing file, or a
 * #fragment that no heading of the Markdown page it names has. Fragments into other kinds of
 * files (a line of source code, say) are not checked.
 */
export function brokenLinks(root: string, files: readonly string[]): { checked: number; broken: BrokenLink[] } {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string) => {
    if (!anchorsOf.has(path)) anchorsOf.set(path, headingAnchors(readFileSync(path, "utf8")));
    return anchorsOf.get(path)!;
  };
  const broken: BrokenLink[] = [];
  let checked = 0;
  for (const file of files) {
    const page = join(root, file);
    for (const target of relativeLinkTargets(readFileSync(page, "utf8"))) {
      checked++;
      const hash = target.indexOf("#");
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const fragment = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const destination = pathPart === "" ? page : pathPart.startsWith("/") ? join(root, pathPart) : resolve(dirname(page), pathPart);
      if (!existsSync(destination)) {
        broken.push({ file, target, problem: `no file ${relative(root, destination)}` });
      } else if (fragment !== undefined && statSync(destination).isFile() && extname(destination) === ".md" && !anchors(destination).has(fragment)) {
        broken.push({ file, target, problem: `no heading #${fragment} in ${relative(root, destination)}` });
      }
    }
  }
  return { checked, broken };
}
