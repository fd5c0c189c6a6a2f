// Runs before `npm start` and `npm test` (their pre-scripts), with nothing installed yet: installs
// the locked npm dependencies when node_modules is missing or stale. This is what lets a fresh
// clone run either command directly. The dependencies bring Node.js 24 (the npm package `node`),
// which npm scripts find first on PATH; the machine's Node only has to run this install.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 17)) {
  console.error(`appstack's install needs Node.js 20.17 or later with npm 11 (this is ${process.version}); it then brings Node.js 24 itself. See README.md`);
  process.exit(1);
}

const lockDigest = createHash("sha256").update(readFileSync(join(root, "package-lock.json"))).digest("hex");
const stamp = join(root, "node_modules", ".appstack-lock-sha256");
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== lockDigest) {
  console.error("bootstrap: installing the locked npm dependencies (npm ci)...");
  // Errors only: the machine's older Node that runs this install draws engine warnings for the
  // packages that will run on the Node.js 24 being installed.
  execFileSync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: root, stdio: "inherit" });
  writeFileSync(stamp, lockDigest);
  const node = JSON.parse(readFileSync(join(root, "node_modules", "node", "package.json"), "utf8")).version;
  console.error(`bootstrap: done; npm scripts run on Node.js ${node} (node_modules/.bin/node)`);
}
