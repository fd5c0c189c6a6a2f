// The real node's cluster DNS settings: where the Service sits, and what CoreDNS is told.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { corefile, dnsServiceIp, upstreamResolver } from "../../toolchain/cluster/node-dns.ts";

test("the DNS Service takes the Service range's tenth address, as kubeadm's does", () => {
  assert.equal(dnsServiceIp("10.96.0.0/16"), "10.96.0.10");
});

test("CoreDNS answers on the node's address for cluster.local, and forwards other names only when the machine has a nameserver", () => {
  const settings = { address: "10.247.3.1", kubeconfig: "/c/coredns.kubeconfig", healthPort: 1001, readyPort: 1002 };
  const withUpstream = corefile({ ...settings, upstream: "/etc/resolv.conf" });
  assert.match(withUpstream, /^\s+bind 10\.247\.3\.1$/m);
  assert.match(withUpstream, /^\s+kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{$/m);
  assert.match(withUpstream, /^\s+kubeconfig \/c\/coredns\.kubeconfig$/m);
  assert.match(withUpstream, /^\s+ready 127\.0\.0\.1:1002$/m);
  assert.match(withUpstream, /^\s+forward \. \/etc\/resolv\.conf$/m);
  assert.doesNotMatch(corefile(settings), /forward/);

  const dir = mkdtempSync(join(tmpdir(), "node-dns-"));
  writeFileSync(join(dir, "with"), "search example\nnameserver 192.0.2.53\n");
  writeFileSync(join(dir, "without"), "search example\n");
  assert.equal(upstreamResolver(join(dir, "with")), join(dir, "with"));
  assert.equal(upstreamResolver(join(dir, "without")), undefined);
  assert.equal(upstreamResolver(join(dir, "absent")), undefined);
});
