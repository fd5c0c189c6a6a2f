// Runs before `npm start` and `npm test` (their pre-scripts), with nothing installed yet: checks
// Node, then installs the locked npm dependencies when node_modules is missing or stale. This is
// what lets a fresh clone run either command directly.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`appstack needs Node.js 20.19 or later (this is ${process.version}); see README.md`);
  process.exit(1);
}

const lockDigest = createHash("sha256").update(readFileSync(join(root, "package-lock.json"))).digest("hex");
const stamp = join(root, "node_modules", ".appstack-lock-sha256");
if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== lockDigest) {
  console.error("bootstrap: installing the locked npm dependencies (npm ci)...");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: root, stdio: "inherit" });
  writeFileSync(stamp, lockDigest);
}
