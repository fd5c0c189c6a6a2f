// `appstack history app/web`: what appstack has done to one object, when and why, one row per
// update of its stack, from Pulumi's stack history. Each update's message records why it ran
// (operator/pulumi/update-messages.ts). The state is found as the operator finds it
// (APPSTACK_STATE_DIR, APPSTACK_BACKEND_URL, APPSTACK_PASSPHRASE, or --state-dir/--backend-url).
import { existsSync } from "node:fs";
import { LocalWorkspace, Stack, StackNotFoundError, type UpdateSummary } from "@pulumi/pulumi/automation/index.js";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import { engineFolders, loadConfig, operatorOptions } from "../manager/config.ts";
import { workspaceOptions } from "../pulumi/engine.ts";
import { stackName, projectName } from "../pulumi/stack-names.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { stateStore } from "../pulumi/state-store.ts";
import { DeletedHistory, type StoredUpdate } from "../pulumi/deleted-history.ts";
import { describeWhy, parseUpdateMessage, type UpdateWhy } from "../pulumi/update-messages.ts";
import { engineBinaries } from "../../toolchain/tools.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { kubeConfigOf, kubeFlagsUsage, kubeOptions, namespaceOf, outputFormat, parseObjectRef, printData } from "./kube-flags.ts";
import { table } from "./table.ts";

export const historyUsage = `usage: appstack history app/NAME|memcached/NAME [flags]
  one row per update of the object's stack: time, operation and result, the generation applied,
  why (spec changed, drift repaired, plan approved, retry) and the resource changes; oldest first.
  A deleted object's rows (its destroy the last) are kept after its stack is removed.
${kubeFlagsUsage}  --state-dir=DIR  --backend-url=URL`;

/** One update of an object's stack. */
export interface HistoryRow {
  /** Pulumi's update number of the stack, where the backend numbers them (the file backend does not). */
  readonly version?: number;
  readonly time: string;
  readonly operation: string;
  readonly result: string;
  /** The generation applied; undefined for an update appstack did not record (a person's `pulumi up`, say). */
  readonly generation?: number;
  readonly why?: UpdateWhy;
  /** The why in words, or the update's own message when appstack did not record one. */
  readonly reason: string;
  readonly fields?: readonly string[];
  readonly plan?: string;
  readonly attempt?: number;
  readonly changes: Record<string, number>;
}

/** What a row is made of: an update as the Automation API returns it. */
type Summary = Pick<UpdateSummary, "kind" | "startTime" | "message" | "result" | "resourceChanges">;

/** An update as the file backend stores it (a deleted stack's, kept aside), as the Automation API returns it. */
export function summaryOf(stored: StoredUpdate): Summary {
  return { kind: stored.kind as UpdateSummary["kind"], startTime: new Date(stored.startTime * 1000), message: stored.message ?? "", result: stored.result as UpdateSummary["result"], ...(stored.resourceChanges ? { resourceChanges: stored.resourceChanges } : {}) };
}

/** The rows of Pulumi's history (newest first), oldest first. */
export function historyRows(summaries: readonly Summary[]): HistoryRow[] {
  return [...summaries].reverse().map((summary) => {
    const record = parseUpdateMessage(summary.message);
    const version = (summary as { version?: number }).version;
    return {
      ...(version ? { version } : {}),
      time: new Date(summary.startTime).toISOString(),
      operation: summary.kind,
      result: summary.result,
      ...(record ? { generation: record.generation, why: record.why } : {}),
      reason: record ? describeWhy(record) : summary.message || "(no message)",
      ...(record?.fields ? { fields: record.fields } : {}),
      ...(record?.plan ? { plan: record.plan } : {}),
      ...(record?.attempt ? { attempt: record.attempt } : {}),
      changes: summary.resourceChanges ?? {},
    };
  });
}

/** Resource changes as `create 3`, `update 1, same 2`; steps that did nothing last. */
export function describeChangeCounts(changes: Record<string, number>): string {
  const entries = Object.entries(changes).filter(([, count]) => count > 0);
  entries.sort(([a], [b]) => (a === "same" ? 1 : b === "same" ? -1 : a.localeCompare(b)));
  return entries.map(([step, count]) => `${step} ${count}`).join(", ") || "none";
}

export function historyTable(rows: readonly HistoryRow[]): string {
  return table(
    ["time", "operation", "generation", "why", "changes"],
    rows.map((row) => [row.time.replace(/\.\d+Z$/, "Z"), `${row.operation} ${row.result}`, row.generation === undefined ? "-" : String(row.generation), row.reason, describeChangeCounts(row.changes)]),
  );
}

/** The Pulumi CLI did not answer in time; the Automation API's history() takes no cancellation. */
class HistoryTimedOut extends Error {}

async function readHistory(argv: readonly string[]): Promise<{ rows: HistoryRow[]; format: ReturnType<typeof outputFormat>; note?: string }> {
  const { values, positionals } = parseCommandLine(argv, { ...kubeOptions, "state-dir": operatorOptions["state-dir"], "backend-url": operatorOptions["backend-url"] }, historyUsage);
  if (positionals.length !== 1) throw new UsageError(`name one object\n${historyUsage}`);
  const { kind, name } = parseObjectRef(positionals[0], historyUsage);
  if (values["all-namespaces"]) throw new UsageError(`history names one object: -n NAMESPACE, not -A\n${historyUsage}`);
  const format = outputFormat(values, historyUsage);
  const namespace = namespaceOf(values, kubeConfigOf(values));
  const config = loadConfig({ ...(values["state-dir"] ? { "state-dir": values["state-dir"] } : {}), ...(values["backend-url"] ? { "backend-url": values["backend-url"] } : {}) }, process.env, { readOnly: true });
  const { pulumiHome, workDir } = engineFolders(config.stateDir);
  if (!existsSync(workDir)) throw new Error(`no operator has used the state folder ${config.stateDir} (set APPSTACK_STATE_DIR or --state-dir to the operator's)`);
  const settings = { backendUrl: config.backendUrl, passphrase: config.passphrase, pulumiHome, binaries: engineBinaries() };
  // The shared work folder's Pulumi.yaml is the operator's: not rewritten (no project settings).
  const io = new StateIo(config.operationTimeoutMs);
  const { projectSettings: _settings, ...options } = await workspaceOptions(settings, projectName, io);
  const stack = stackName(kind, namespace, name);
  const read = async (): Promise<Summary[]> => {
    const workspace = await LocalWorkspace.create({ ...options, workDir });
    return (await Stack.select(stack, workspace)).history(undefined, undefined, false);
  };
  let note: string | undefined;
  const summaries = await withinDeadline(read(), config.operationTimeoutMs).catch(async (error: unknown) => {
    if (!(error instanceof StackNotFoundError)) throw error;
    const deleted = await new DeletedHistory(stateStore(config.backendUrl, io)).latest(stack);
    if (!deleted) throw new Error(`${kind.toLowerCase()}/${name} in namespace ${namespace} has no stack (stack ${stack}) and no kept history: it was never applied, or it was deleted too long ago`);
    note = `${kind.toLowerCase()}/${name} in namespace ${namespace} was deleted at ${deleted.deletedAt.toISOString()}: its stack is removed; these rows were kept from its history`;
    return deleted.updates.map(summaryOf).reverse();
  });
  if (summaries === timedOut) throw new HistoryTimedOut(`reading the history of stack ${stack} took longer than ${config.operationTimeoutMs / 1000} s (APPSTACK_OPERATION_TIMEOUT_SECONDS)`);
  return { rows: historyRows(summaries), format, ...(note ? { note } : {}) };
}

export async function runHistoryCli(argv: readonly string[]): Promise<number> {
  try {
    const { rows, format, note } = await readHistory(argv);
    if (note) process.stderr.write(note + "\n");
    process.stdout.write(format === "table" ? historyTable(rows) : printData(format, rows));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`appstack history: ${error instanceof Error ? error.message : String(error)}\n`);
    // The CLI process still runs (it only reads): exit without waiting for it.
    if (error instanceof HistoryTimedOut) process.exit(1);
    return 1;
  }
}
