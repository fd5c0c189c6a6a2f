// Imports run one way. Every folder of the code is a layer, and a file imports only from its own
// folder or from a lower layer, never from a higher one or from a sibling (same rank):
//
//   6  operator/cmd/, index.ts   the wiring: entry points and CLI commands, the install program
//   5  toolchain/                the pinned binaries: only the wiring knows where they are
//   4  operator/manager/         the automation service: service, operator (the controller wired
//                                to the stack driver), leader election, health, metrics, config
//   3  operator/controller/      watch, queue, reconcile, children, drift, status, events
//   2  operator/kube/            the Kubernetes client side      (siblings: neither imports the other)
//   2  operator/pulumi/          the stack driver and the engine (binary paths come in EngineSettings)
//   1  components/               the ComponentResources
//   0  operator/base/            what every layer uses: logging, deadlines, redaction, shared contracts
//   0  crds/                     the API types and CRD schemas
//
// A folder not in this table fails the test: place it before using it.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { test } from "node:test";
import { repoRoot } from "../../toolchain/tools.ts";

/** Layers by folder (relative to the repository, `/`-separated); the rank of `index.ts` is that of the root. */
const ranks: ReadonlyMap<string, number> = new Map([
  ["operator/cmd", 6],
  ["", 6],
  ["toolchain", 5],
  ["operator/manager", 4],
  ["operator/controller", 3],
  ["operator/kube", 2],
  ["operator/pulumi", 2],
  ["components", 1],
  ["operator/base", 0],
  ["crds", 0],
]);

/** The folders whose code is layered; tests, benches and generated files import freely. */
const scanned = ["operator", "components", "crds", "toolchain", "index.ts"];

/** The layer of a file: the longest table folder that holds it (toolchain/cluster/ is toolchain's). */
function layerOf(file: string): string | undefined {
  const folder = dirname(file) === "." ? "" : dirname(file).split(sep).join("/");
  if (folder === "") return "";
  return [...ranks.keys()].filter((layer) => layer !== "" && (folder === layer || folder.startsWith(`${layer}/`))).sort((a, b) => b.length - a.length)[0];
}

function typeScriptFiles(root: string, path: string): string[] {
  const full = join(root, path);
  if (path.endsWith(".ts")) return [path];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const child = join(path, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : typeScriptFiles(root, child);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [child] : [];
  });
}

/** The relative modules a file imports: static imports, re-exports, side-effect and dynamic imports. */
function relativeImports(source: string): string[] {
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.\.?\/[^"']+)["']/g;
  return [...source.matchAll(pattern)].map((match) => match[1]!);
}

interface Arrow {
  readonly from: string;
  readonly to: string;
}

/** Every import between two layers, as files; an import of a file in no layer is reported as such. */
function layerArrows(root: string): { arrows: Arrow[]; unplaced: string[] } {
  const arrows: Arrow[] = [];
  const unplaced = new Set<string>();
  for (const file of scanned.flatMap((path) => typeScriptFiles(root, path))) {
    if (layerOf(file) === undefined) unplaced.add(file);
    for (const target of relativeImports(readFileSync(join(root, file), "utf8"))) {
      const to = relative(root, resolve(root, dirname(file), target));
      if (to.startsWith("..")) continue;
      if (layerOf(to) === undefined) unplaced.add(to);
      else if (layerOf(to) !== layerOf(file)) arrows.push({ from: file, to });
    }
  }
  return { arrows, unplaced: [...unplaced].sort() };
}

const shown = (layer: string) => (layer === "" ? "index.ts" : `${layer}/`);

/** The imports that point to a higher layer or a sibling, named file to file. */
function wrongWay(arrows: Arrow[]): string[] {
  return arrows
    .filter(({ from, to }) => ranks.get(layerOf(to)!)! >= ranks.get(layerOf(from)!)!)
    .map(({ from, to }) => `${from} imports ${to} (${shown(layerOf(from)!)} ${ranks.get(layerOf(from)!)} -> ${shown(layerOf(to)!)} ${ranks.get(layerOf(to)!)})`)
    .sort();
}

/** Cycles among folders, each as the folders around it. */
function folderCycles(arrows: Arrow[]): string[] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of arrows) {
    const edges = next.get(layerOf(from)!) ?? new Set<string>();
    edges.add(layerOf(to)!);
    next.set(layerOf(from)!, edges);
  }
  const cycles = new Set<string>();
  const visit = (layer: string, path: string[]) => {
    for (const target of next.get(layer) ?? []) {
      const start = path.indexOf(target);
      if (start >= 0) {
        const cycle = path.slice(start);
        const first = cycle.indexOf([...cycle].sort()[0]!);
        cycles.add([...cycle.slice(first), ...cycle.slice(0, first), cycle[first]!].map(shown).join(" -> "));
      } else visit(target, [...path, target]);
    }
  };
  for (const layer of next.keys()) visit(layer, [layer]);
  return [...cycles].sort();
}

test("every import points to the importer's own folder or a lower layer, and no folders import each other in a circle", () => {
  const { arrows, unplaced } = layerArrows(repoRoot);
  assert.ok(arrows.length > 50, `only ${arrows.length} imports between layers found: the scan is not reading the code`);
  assert.deepEqual(unplaced, [], "files in no layer: add their folder to the table at the top of this test");
  assert.deepEqual(wrongWay(arrows), []);
  assert.deepEqual(folderCycles(arrows), []);
});

test("an import to a higher layer, one to a sibling, and a cycle between folders are each named", () => {
  const root = mkdtempSync(join(tmpdir(), "appstack-layers-"));
  try {
    const write = (file: string, source: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), source);
    };
    write("index.ts", `import "./components/a.ts";\n`);
    write("crds/types.ts", "export {};\n");
    write("components/a.ts", `export { x } from "../crds/types.ts";\n`);
    write("toolchain/tools.ts", "export {};\n");
    write("operator/base/log.ts", `import type { Thing } from "../manager/metrics.ts";\n`);
    write("operator/kube/peer-pods.ts", `const locks = await import("../pulumi/stack-locks.ts");\n`);
    write("operator/pulumi/stack-locks.ts", "export {};\n");
    write("operator/controller/queue.ts", `import {\n  log,\n} from "../base/log.ts";\n`);
    write("operator/manager/metrics.ts", `import { queue } from "../controller/queue.ts";\n`);
    write("operator/cmd/main.ts", `import { tools } from "../../toolchain/tools.ts";\n`);
    const { arrows, unplaced } = layerArrows(root);
    assert.deepEqual(unplaced, []);
    assert.deepEqual(wrongWay(arrows), [
      "operator/base/log.ts imports operator/manager/metrics.ts (operator/base/ 0 -> operator/manager/ 4)",
      "operator/kube/peer-pods.ts imports operator/pulumi/stack-locks.ts (operator/kube/ 2 -> operator/pulumi/ 2)",
    ]);
    assert.deepEqual(folderCycles(arrows), ["operator/base/ -> operator/manager/ -> operator/controller/ -> operator/base/"]);
    write("operator/extra/thing.ts", `import "../base/log.ts";\n`);
    assert.deepEqual(layerArrows(root).unplaced, ["operator/extra/thing.ts"]);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
