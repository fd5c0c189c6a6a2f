// Measured figures in Markdown: a number with a unit of time, size, share or ratio (s, ms, min,
// KiB, MiB, GiB, KB, MB, GB, %, x, and the spelled seconds, minutes and hours), processor time
// ("CPU s") included, and the same written in words ("about a minute", "twice as fast":
// figures-in-words.ts). What is not a statement of a measure is left out: fenced code and code
// spans (commands, manifests, log lines), and the cells of a table column headed as a target, a
// limit or a default (design targets and code-defined limits are not measurements).

import { figuresInWords } from "./figures-in-words.ts";

export interface Figure {
  /** 1-based line number in the page. */
  readonly line: number;
  /** The figure as written, e.g. "1,702.3 s" or "60%". */
  readonly text: string;
  /** The figure normalised for the allowlist: one space before a unit word or symbol, "%" and "x" attached; words in lower case, one space apart. */
  readonly figure: string;
}

const number = String.raw`(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`;
const range = String.raw`(?:\s*(?:to|-|–|/)\s*${number})?`;
const unit = String.raw`(?:ms|s|min|minutes?|seconds?|hours?|KiB|MiB|GiB|KB|MB|GB|%|x)`;
// "0.3 CPU s": a processor time is a measure too.
const cpu = String.raw`(?:CPU\s)?`;
// Not part of a longer token: no letter, digit, dot or comma before (a version, "v1.30"), none after.
const figurePattern = new RegExp(String.raw`(?<![\w.,/-])(${number}${range})\s?(${cpu}${unit})(?![\w])`, "g");

/** Column headers whose cells are exempt: "target", "limit", "default" (and their plurals). */
const exemptHeader = /\b(targets?|limits?|defaults?)\b/i;

function cells(row: string): string[] {
  return row.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/);
}

export function normalise(text: string): string {
  const match = new RegExp(`^(${number}${range})\\s?(${cpu}${unit})$`).exec(text);
  if (!match) return text;
  const [, value, symbol] = match;
  return symbol === "%" || symbol === "x" ? `${value}${symbol}` : `${value} ${symbol}`;
}

/** A table row, a blank line or a fence ends a paragraph: what a line of prose may continue into. */
function continuation(next: string | undefined): string {
  if (next === undefined || /^\s*($|\||`{3,}|~{3,}|#)/.test(next)) return "";
  return next.replace(/(`+)[\s\S]*?\1/g, "code");
}

/** The figures of one line or table cell; a line of prose is read on into `next`, its paragraph's next line. */
function figuresOf(part: string, next: string | undefined, line: number): Figure[] {
  const numerals = [...part.matchAll(figurePattern)].map((match) => ({ line, text: match[0], figure: normalise(match[0]) }));
  const words = figuresInWords(next === undefined ? part : `${part} ${next}`, part.length).map((match) => ({ line, text: match.text, figure: match.text.toLowerCase().replace(/\s+/g, " ") }));
  return [...numerals, ...words];
}

/** Every measured figure of a page, outside code and outside the exempt columns of its tables. */
export function measuredFigures(markdown: string): Figure[] {
  const figures: Figure[] = [];
  let fence: string | undefined;
  let exemptColumns: Set<number> | undefined;
  const lines = markdown.split("\n");
  lines.forEach((raw, index) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(raw)?.[1];
    if (fence === undefined && marker) {
      fence = marker;
      return;
    }
    if (fence !== undefined) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && raw.trim() === marker) fence = undefined;
      return;
    }
    const text = raw.replace(/(`+)[\s\S]*?\1/g, "code");
    let scanned = [text];
    const prose = !/^\s*\|/.test(text);
    if (!prose) {
      const next = lines[index + 1] ?? "";
      if (/^\s*\|?\s*:?-{3,}/.test(next)) {
        // A header row: which of its columns are exempt.
        exemptColumns = new Set(cells(text).flatMap((cell, column) => (exemptHeader.test(cell) ? [column] : [])));
      } else if (!/^\s*\|?\s*:?-{3,}/.test(text)) {
        scanned = cells(text).filter((_, column) => !exemptColumns?.has(column));
      } else {
        scanned = [];
      }
    } else {
      exemptColumns = undefined;
    }
    const next = prose ? continuation(lines[index + 1]) : undefined;
    for (const part of scanned) figures.push(...figuresOf(part, next, index + 1));
  });
  return figures;
}
