// What the image and real-node files build on first use, built ahead of them: `npm test`
// (test/run-all.ts) runs this beside the unit and kwok end-to-end files, at the lowest CPU priority
// (its builds inherit it, and the I/O priority follows the CPU's), so that those files keep the
// cores first. The real-node files then find the
// node's binaries and the images cached. It changes nothing they see: each still builds what is
// missing, and every build is atomic (a partial file renamed, an image ID checked), so a prebuild
// cut short leaves nothing half made. Where the real-node files cannot run, it builds nothing.
import { setPriority } from "node:os";
import { busyboxImage, pauseImage } from "../../toolchain/cluster/node-images.ts";
import { buildTool } from "../../toolchain/build.ts";
import { buildImages } from "../../toolchain/images/build.ts";
import { nodeTools } from "../../toolchain/tools.ts";
import { missingForRealNode } from "../helpers/real-node-gate.ts";

const lowestPriority = 19;

const missing = missingForRealNode("images and node");
if (missing !== undefined) {
  console.error(`real-node prebuild: nothing built; this machine ${missing}`);
} else if (process.env["APPSTACK_REAL_NODE_TESTS"] === "0") {
  console.error("real-node prebuild: nothing built (APPSTACK_REAL_NODE_TESTS=0)");
} else {
  setPriority(lowestPriority);
  const started = Date.now();
  const log = (line: string) => console.error(line);
  for (const tool of nodeTools) buildTool(tool, log);
  pauseImage();
  busyboxImage();
  await buildImages(log);
  console.error(`real-node prebuild: done in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
