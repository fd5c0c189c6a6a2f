// A node:test reporter that writes each test file's wall time, slowest first, as tab-separated
// lines: seconds, top-level tests passed, failed, file. `npm test` writes one table per step
// (.test-times-unit.tsv, .test-times-real-node.tsv), so that every run, CI's on a clean clone
// included, says where its time goes.
// The time is the runner's own for the file (its `test:complete` event, named as the file, at
// nesting 0): with two files running at once, the spans between a file's first and last relayed
// events overlap and say little. A file whose process ended without that event gets the sum of
// its top-level tests' times.
import { relative, resolve } from "node:path";

export default async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if (!event.data?.file) continue;
    // The runner names a file as given on its command line, its tests by their absolute path.
    const file = relative(process.cwd(), resolve(event.data.file));
    const entry = files.get(file) ?? { own: undefined, summed: 0, passed: 0, failed: 0 };
    const topLevel = event.data.nesting === 0;
    const isTheFile = topLevel && relative(process.cwd(), resolve(event.data.name ?? "")) === file;
    if (event.type === "test:complete" && isTheFile) entry.own = event.data.details?.duration_ms;
    else if (topLevel && !isTheFile && (event.type === "test:pass" || event.type === "test:fail")) {
      entry.summed += event.data.details?.duration_ms ?? 0;
      if (event.type === "test:pass") entry.passed++;
      else entry.failed++;
    }
    files.set(file, entry);
  }
  const seconds = (entry) => (entry.own ?? entry.summed) / 1000;
  yield "seconds\tpassed\tfailed\tfile\n";
  for (const [file, entry] of [...files].sort(([, a], [, b]) => seconds(b) - seconds(a))) {
    yield `${seconds(entry).toFixed(1)}\t${entry.passed}\t${entry.failed}\t${file}\n`;
  }
}
