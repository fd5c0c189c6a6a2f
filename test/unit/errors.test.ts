import assert from "node:assert/strict";
import { test } from "node:test";
import { errorReason, ReportedFailure } from "../../operator/controller/errors.ts";
import { StateFolderUnanswered } from "../../operator/pulumi/state-io.ts";

const withCode = (code: string | number, message = "failed") => Object.assign(new Error(message), { code });

test("a full or read-only state folder is StateUnwritable, not an unreachable API server", () => {
  // Node's own file-system errors (a plan or passphrase file that cannot be written)...
  for (const code of ["ENOSPC", "EDQUOT", "EROFS", "EACCES"]) assert.equal(errorReason(withCode(code, `${code}: open '/state/plans/x.json'`)), "StateUnwritable", code);
  // ...and the Pulumi CLI's words for them (a `stack init` that cannot write the stack's file).
  assert.equal(errorReason(new Error("code: 255\nstderr: error: could not create stack: write /state/backend/.pulumi/stacks/appstack/a.json: no space left on device")), "StateUnwritable");
  assert.equal(errorReason(new Error("open /state/backend/.pulumi/meta.yaml: read-only file system")), "StateUnwritable");
});

test("a state folder that does not answer within the deadline is OperationTimedOut, as an operation past it is", () => {
  const stuck = { what: "reading", path: "/state/backend/.pulumi/stacks/appstack/a.json", since: new Date() };
  assert.equal(errorReason(new StateFolderUnanswered(`the state folder does not answer: reading ${stuck.path} did not finish within its deadline of 5 s`, stuck)), "OperationTimedOut");
});

test("API and network errors keep their reasons", () => {
  assert.equal(errorReason(withCode("ECONNREFUSED")), "APIUnreachable");
  assert.equal(errorReason(withCode(403)), "Forbidden");
  assert.equal(errorReason(withCode(503)), "APIServerError");
  assert.equal(errorReason(new ReportedFailure("ResourceConflict", "taken")), "ResourceConflict");
  assert.equal(errorReason(new Error("something else")), "InternalError");
});
