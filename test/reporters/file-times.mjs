// A node:test reporter that writes each test file's wall time, slowest first, as tab-separated
// lines: seconds, top-level tests passed, failed, start (UTC), file. `npm test` writes one table
// per step (.test-times-unit.tsv, .test-times-real-node.tsv), so that every run, CI's on a clean
// clone included, says where its time goes. A file's time runs from the first to the last event
// the runner relays from it, from when the runner takes it from its queue.
import { relative, resolve } from "node:path";

export default async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    // The runner names a file as given on its command line, its tests by their absolute path.
    const file = event.data?.file && relative(process.cwd(), resolve(event.data.file));
    if (!file) continue;
    const now = Date.now();
    const entry = files.get(file) ?? { first: now, last: now, passed: 0, failed: 0 };
    // The runner enqueues every file at its start; a file starts running when it is dequeued.
    if (event.type === "test:dequeue" && event.data.nesting === 0 && relative(process.cwd(), resolve(event.data.name)) === file) entry.first = now;
    entry.last = now;
    if (event.data.nesting === 0 && event.type === "test:pass") entry.passed++;
    if (event.data.nesting === 0 && event.type === "test:fail") entry.failed++;
    files.set(file, entry);
  }
  const rows = [...files].sort(([, a], [, b]) => b.last - b.first - (a.last - a.first));
  yield "seconds\tpassed\tfailed\tstart\tfile\n";
  for (const [file, e] of rows) yield `${((e.last - e.first) / 1000).toFixed(1)}\t${e.passed}\t${e.failed}\t${new Date(e.first).toISOString().slice(11, 19)}\t${file}\n`;
}
