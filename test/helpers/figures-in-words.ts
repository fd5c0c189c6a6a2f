// Measured figures written in words: "about a minute", "half a second", "a few seconds", "takes
// minutes", "twice as fast", "three times more", "a third of". The numeral scan
// (docs-figures.ts) cannot see them, and a page that writes "about a minute" states a measure as
// surely as one that writes "58 s". Ordinals are not durations: "a second replica" is left out, as
// "a second" counts only where what follows it reads as a duration's ("a second or two", "a
// second later", "within a second.").

export interface WordMatch {
  /** Where the figure starts in the scanned text. */
  readonly index: number;
  /** The figure as written. */
  readonly text: string;
}

const numberWord = String.raw`(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?|a\s+hundred)`;
// "a" and "an" last, so that "a few", "a couple of" and "a quarter of an" are tried first.
const count = String.raw`(?:${numberWord}|several|a\s+couple\s+of|a\s+few|few|half\s+an?|a\s+quarter\s+of\s+an?|an?)`;
const durationUnit = String.raw`(?:milliseconds?|seconds?|minutes?|hours?|percent|per\s+cent)`;
/** A count of a unit: "about a minute", "half an hour", "a few seconds", "ten percent". */
const duration = new RegExp(String.raw`(?<![\w-])(${count})\s+(${durationUnit})(?![\w-])`, "gi");
/** A duration with no count, taken or waited: "takes minutes", "gone within seconds". */
const bareDuration = /(?<![\w-])(?:within|takes?|took|taking)\s+(?:seconds|minutes|hours)(?![\w-])/gi;

const multiple = String.raw`(?:twice|thrice|(?:${numberWord}|several|many|a\s+few|\d+(?:\.\d+)?)\s+times|(?:a|one|two|three)\s+(?:half|thirds?|quarters?|fifths?|tenths?)|half|(?:two|three|four|five|ten|hundred)fold|an\s+order\s+of\s+magnitude)`;
const comparison = String.raw`(?:faster|slower|quicker|longer|shorter|more|less|fewer|larger|smaller|bigger|higher|lower|cheaper|as\s+\w+|the|what|that|of)`;
/** A ratio or a share: "twice as fast", "three times more", "a third of", "half the". */
const ratio = new RegExp(String.raw`(?<![\w-])${multiple}\s+${comparison}(?![\w-])`, "gi");

/** What may follow "a second" when it is a duration and not an ordinal ("a second replica"). */
const afterDurationSecond = /^\s*(?:$|[.,;:)!?]|(?:or|and|later|apart|ago|behind|ahead|before|after|old|long|of|per|each|too)(?![\w-]))/i;

/**
 * The figures in words that start in the first `own` characters of `text`; the rest of `text` (the
 * next line of the paragraph) is there so that a figure broken over two lines is still read whole.
 */
export function figuresInWords(text: string, own = text.length): WordMatch[] {
  const found: WordMatch[] = [];
  for (const match of text.matchAll(duration)) {
    const [whole, counted = "", unit = ""] = match;
    const ordinal = /^an?$/i.test(counted) && /^second$/i.test(unit) && !afterDurationSecond.test(text.slice(match.index + whole.length));
    if (!ordinal) found.push({ index: match.index, text: whole });
  }
  for (const pattern of [bareDuration, ratio]) {
    for (const match of text.matchAll(pattern)) found.push({ index: match.index, text: match[0] });
  }
  return found.filter((match) => match.index < own).sort((a, b) => a.index - b.index);
}
