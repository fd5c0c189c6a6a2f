// Failures the operator works around must still be said, at warn, with the reason.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiException, type CoreV1Api } from "@kubernetes/client-node";
import type { Workload } from "../../crds/types.ts";
import { EventRecorder } from "../../operator/controller/events.ts";
import type { KubeClients } from "../../operator/kube/clients.ts";
import { namespaceTerminating } from "../../operator/kube/namespaces.ts";
import { createLogger } from "../../operator/base/log.ts";

type LogLine = { level: string; msg: string; [field: string]: unknown };

function capturedLog() {
  const lines: LogLine[] = [];
  const log = createLogger({ level: "debug", format: "json", write: (line) => void lines.push(JSON.parse(line) as LogLine) });
  return { log, lines };
}

const forbidden = (what: string) => new ApiException(403, `HTTP-Code: 403\nMessage: Unknown API Status Code!\nBody: "{\\"kind\\":\\"Status\\",\\"message\\":\\"${what} is forbidden\\"}"`, {}, {});

test("a namespace that cannot be read is taken for not terminating, and said at warn with the reason", async () => {
  const { log, lines } = capturedLog();
  const core = { readNamespace: () => Promise.reject(forbidden("namespaces \"team\"")) } as unknown as CoreV1Api;
  assert.equal(await namespaceTerminating(core, "team", log), false);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, "warn");
  assert.equal(lines[0]!["namespace"], "team");
  assert.match(String(lines[0]!["error"]), /HTTP 403: namespaces \\?"team\\?" is forbidden/);
});

test("a namespace read says whether it is terminating", async () => {
  const { log, lines } = capturedLog();
  const phase = (value: string) => ({ readNamespace: () => Promise.resolve({ status: { phase: value } }) }) as unknown as CoreV1Api;
  assert.equal(await namespaceTerminating(phase("Terminating"), "team", log), true);
  assert.equal(await namespaceTerminating(phase("Active"), "team", log), false);
  assert.deepEqual(lines, []);
});

test("an Event that cannot be written is said at warn with the object, its reason and the error", async () => {
  const { log, lines } = capturedLog();
  let failWrite!: () => void;
  const written = new Promise<void>((resolve) => (failWrite = resolve));
  const clients = {
    core: {
      createNamespacedEvent: () => {
        failWrite();
        return Promise.reject(forbidden("events"));
      },
    },
  } as unknown as KubeClients;
  const object = { apiVersion: "appstack.dev/v1alpha1", kind: "App", metadata: { name: "web", namespace: "team", uid: "u-1" }, spec: {} } as unknown as Workload;
  new EventRecorder(clients, log).record(object, "Warning", "StackUpdateFailed", "pulumi up failed");
  await written;
  // The rejection's handler runs on the turn after the rejected promise is returned.
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.level, "warn");
  assert.equal(lines[0]!["reason"], "StackUpdateFailed");
  assert.equal(lines[0]!["object"], "App/team/web");
  assert.match(String(lines[0]!["error"]), /HTTP 403: events is forbidden/);
});
