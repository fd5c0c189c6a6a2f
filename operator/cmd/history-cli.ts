// `appstack history app/web`: what appstack has done to one object, when and why, one row per
// update of its stack. By default from the object's status.history, through the API server: a
// person who may `get` the object reads it with nothing but a kubeconfig, and RBAC decides who
// may. With --stack, from Pulumi's own stack history, longer and kept after a delete, which needs
// the operator's state (APPSTACK_STATE_DIR, APPSTACK_BACKEND_URL, APPSTACK_PASSPHRASE, or
// --state-dir/--backend-url). Each update's message records why it ran (operator/pulumi/update-messages.ts).
import { existsSync } from "node:fs";
import { LocalWorkspace, Stack, StackNotFoundError, type UpdateSummary } from "@pulumi/pulumi/automation/index.js";
import { timedOut, withinDeadline } from "../base/deadline.ts";
import { engineFolders, loadConfig, operatorOptions } from "../manager/config.ts";
import { workspaceOptions } from "../pulumi/engine.ts";
import { stackName, projectName } from "../pulumi/stack-names.ts";
import { StateIo } from "../pulumi/state-io.ts";
import { stateStore } from "../pulumi/state-store.ts";
import { DeletedHistory, type StoredUpdate } from "../pulumi/deleted-history.ts";
import { describeWhy, parseUpdateMessage, type UpdateRecord, type UpdateWhy } from "../pulumi/update-messages.ts";
import { readWorkload } from "../kube/clients.ts";
import { statusHistoryLimit, type StackOperation, type WorkloadKind } from "../../crds/types.ts";
import { engineBinaries } from "../../toolchain/tools.ts";
import { parseCommandLine, UsageError } from "./flags.ts";
import { cliClients, errorText, kubeConfigOf, kubeFlagsUsage, kubeOptions, namespaceOf, outputFormat, parseObjectRef, printData, type KubeFlags, objectRefUsage } from "./kube-flags.ts";
import { table } from "./table.ts";

export const historyUsage = `usage: appstack history ${objectRefUsage} [flags] [--stack [--state-dir=DIR] [--backend-url=URL]]
  one row per update of the object's stack: time, operation and result, the generation applied,
  why (spec changed, drift repaired, plan approved, retry) and the resource changes; oldest first.
  The last ${statusHistoryLimit}, from the object's status: the right to get the object is all it needs.
  --stack: every update Pulumi's stack history keeps, and a deleted object's (its destroy the
  last), from the operator's state: its state folder or backend URL, and its passphrase.
${kubeFlagsUsage}`;

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
  /** A failed operation's message, as the object's status keeps it. */
  readonly error?: string;
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
      ...recordColumns(record, summary.message || "(no message)"),
      changes: summary.resourceChanges ?? {},
    };
  });
}

/** What a row says of why its update ran: the record's fields, or `otherwise` for an update appstack did not record. */
function recordColumns(record: UpdateRecord | undefined, otherwise: string): Pick<HistoryRow, "generation" | "why" | "reason" | "fields" | "plan" | "attempt"> {
  return {
    ...(record ? { generation: record.generation, why: record.why } : {}),
    reason: record ? describeWhy(record) : otherwise,
    ...(record?.fields ? { fields: record.fields } : {}),
    ...(record?.plan ? { plan: record.plan } : {}),
    ...(record?.attempt ? { attempt: record.attempt } : {}),
  };
}

/** The rows of an object's status.history (oldest first already): the same row for the same update as historyRows gives. */
export function statusRows(history: readonly StackOperation[]): HistoryRow[] {
  return history.filter((operation) => operation.kind !== "preview").map((operation) => {
    const record = operation.update;
    return {
      time: new Date(operation.startTime).toISOString(),
      // As Pulumi's history names an up.
      operation: operation.kind === "up" ? "update" : operation.kind,
      result: operation.result,
      ...recordColumns(record, "(not recorded)"),
      changes: operation.resourceChanges ?? {},
      ...(operation.result === "failed" && operation.message ? { error: operation.message } : {}),
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

type Read = { rows: HistoryRow[]; note?: string };

/** kubectl's flags (-A refused: one object), and --stack with where the operator's state is. */
export const historyOptions = { ...kubeOptions, stack: { type: "boolean" }, "state-dir": operatorOptions["state-dir"], "backend-url": operatorOptions["backend-url"] } as const;

async function readHistory(argv: readonly string[]): Promise<Read & { format: ReturnType<typeof outputFormat> }> {
  const { values, positionals } = parseCommandLine(argv, historyOptions, historyUsage);
  if (positionals.length !== 1) throw new UsageError(`name one object\n${historyUsage}`);
  const { kind, name } = parseObjectRef(positionals[0], historyUsage);
  if (values["all-namespaces"]) throw new UsageError(`history names one object: -n NAMESPACE, not -A\n${historyUsage}`);
  const format = outputFormat(values, historyUsage);
  const namespace = namespaceOf(values, kubeConfigOf(values));
  const fromStack = values.stack === true || values["state-dir"] !== undefined || values["backend-url"] !== undefined;
  const read = fromStack ? await readStackHistory(values, kind, namespace, name) : await readStatusHistory(values, kind, namespace, name);
  return { ...read, format };
}

/** The object's status.history, read with the person's own kubeconfig: RBAC decides. */
async function readStatusHistory(flags: KubeFlags, kind: WorkloadKind, namespace: string, name: string): Promise<Read> {
  const object = await readWorkload(cliClients(flags), { kind, namespace, name });
  if (!object) throw new Error(`${kind.toLowerCase()}/${name} not found in namespace ${namespace}; a deleted object's kept history is in the operator's state: --stack`);
  return { rows: statusRows(object.status?.history ?? []) };
}

/** Pulumi's history of the object's stack, or the rows kept of a deleted one, from the operator's state. */
async function readStackHistory(values: { "state-dir"?: string; "backend-url"?: string }, kind: WorkloadKind, namespace: string, name: string): Promise<Read> {
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
  return { rows: historyRows(summaries), ...(note ? { note } : {}) };
}

export async function runHistoryCli(argv: readonly string[]): Promise<number> {
  try {
    const { rows, format, note } = await readHistory(argv);
    if (note) process.stderr.write(note + "\n");
    process.stdout.write(format === "table" ? historyTable(rows) : printData(format, rows));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`appstack history: ${errorText(error)}\n`);
    // The CLI process still runs (it only reads): exit without waiting for it.
    if (error instanceof HistoryTimedOut) process.exit(1);
    return 1;
  }
}
