import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { test } from "node:test";
import { createLogger } from "../../operator/base/log.ts";
import { onStopSignals, sameSignalMs } from "../../operator/manager/signals.ts";

test("one Ctrl-C forwarded by npm and tsx stops gracefully; a second Ctrl-C later stops at once", () => {
  const source = new EventEmitter();
  let clock = 1_000;
  const stops: string[] = [];
  const exits: number[] = [];
  const log = createLogger({ level: "error", format: "json", write: () => undefined });
  onStopSignals((signal) => stops.push(signal), log, source, () => clock, (code) => exits.push(code));

  source.emit("SIGINT", "SIGINT");
  // The same keypress, forwarded by the wrappers in the terminal's process group.
  clock += 3;
  source.emit("SIGINT", "SIGINT");
  clock += 40;
  source.emit("SIGINT", "SIGINT");
  assert.deepEqual(stops, ["SIGINT"]);
  assert.deepEqual(exits, []);

  clock += sameSignalMs;
  source.emit("SIGINT", "SIGINT");
  assert.deepEqual(exits, [1]);
  assert.deepEqual(stops, ["SIGINT"]);
});
