// A provider that fails the kept providers' start check at its second step: it serves the
// protocol's port and acknowledges the operator's environment lines as appstack's slot provider
// does, but refuses every engine's Attach. provider-fallback.test.ts runs it as the slot binary.
import * as grpc from "@grpc/grpc-js";
import providerGrpc from "@pulumi/pulumi/proto/provider_grpc_pb.js";
import { createInterface } from "node:readline";

const server = new grpc.Server();
const refuse = (_call, callback) => callback({ code: grpc.status.PERMISSION_DENIED, details: "this provider takes no engine" });
server.addService(providerGrpc.ResourceProviderService, { attach: refuse });
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${port}\n`);
  createInterface({ input: process.stdin }).on("line", () => process.stdout.write("ok\n")).on("close", () => process.exit(0));
});
