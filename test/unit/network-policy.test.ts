// The operator's NetworkPolicy as a plain spec: which database port it lets out for each backend.
import assert from "node:assert/strict";
import { test } from "node:test";
import { operatorNetworkPolicySpec } from "../../components/network-policy.ts";

type Rule = { ports: { port: number; protocol: string }[] };

const egressPorts = (args: Parameters<typeof operatorNetworkPolicySpec>[0]) => (operatorNetworkPolicySpec(args).egress as Rule[]).flatMap((rule) => rule.ports.map((port) => `${port.protocol}/${port.port}`));

test("the database's port goes out: the URL's, PostgreSQL's default without one or behind a Secret; none for a file backend or an object store", () => {
  const base = { podLabels: { app: "operator" }, ingressPorts: [8081, 8443] };
  const always = ["UDP/53", "TCP/53", "TCP/443", "TCP/6443"];
  assert.deepEqual(egressPorts(base), always);
  assert.deepEqual(egressPorts({ ...base, backendUrl: "s3://bucket" }), always);
  assert.deepEqual(egressPorts({ ...base, backendUrl: "postgres://db.example/appstack" }), [...always, "TCP/5432"]);
  assert.deepEqual(egressPorts({ ...base, backendUrl: "postgresql://u:p@db.example:7000/appstack?sslmode=require" }), [...always, "TCP/7000"]);
  assert.deepEqual(egressPorts({ ...base, backendSecret: true }), [...always, "TCP/5432"]);
  // A database behind the API server's port is let out once.
  assert.deepEqual(egressPorts({ ...base, backendUrl: "postgres://db.example:443/appstack" }), always);
});
