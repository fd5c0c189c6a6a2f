// kube-apiserver's audit log, for a cluster started with `audit` (ClusterOptions): one JSON line
// per request, at level Metadata, written before the response (the log backend's default
// blocking mode), so a test that has its answer finds the line. It counts what the API server's
// metrics leave out (the OpenAPI document is served outside the instrumented handlers), and by
// user, so the control plane's own requests do not count.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const policy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

const logOf = (dir: string) => join(dir, "logs", "audit.log");

export function auditArgs(dir: string): string[] {
  const policyFile = join(dir, "audit-policy.yaml");
  writeFileSync(policyFile, policy);
  return [`--audit-policy-file=${policyFile}`, `--audit-log-path=${logOf(dir)}`, "--audit-log-format=json"];
}

/** What one audit line says of its request (audit.k8s.io/v1 Event, the fields tests read). */
export interface AuditedRequest {
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username: string };
  readonly objectRef?: { readonly resource?: string; readonly namespace?: string };
  /** When the API server received it (RFC 3339, microseconds). A long request (a watch) is logged when it ends. */
  readonly requestReceivedTimestamp: string;
}

/** The requests in the audit log of the cluster in `dir` so far; a line being written is left for the next read. */
export function auditedRequests(dir: string): AuditedRequest[] {
  if (!existsSync(logOf(dir))) return [];
  return readFileSync(logOf(dir), "utf8").split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line) as AuditedRequest];
    } catch {
      return [];
    }
  });
}
