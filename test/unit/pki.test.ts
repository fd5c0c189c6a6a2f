// The local cluster's certificates: every one must parse under OpenSSL's strict DER rules, or a
// cluster fails to start now and then ("illegal padding" from a padded serial number).
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { test } from "node:test";
import { createClusterPki, serialNumber } from "../../toolchain/cluster/pki.ts";

test("serial numbers are positive and minimally encoded, every time", () => {
  for (let i = 0; i < 20_000; i++) {
    const serial = serialNumber();
    // Whole bytes: an odd hex digit in front becomes a byte of its own (a zero pad, for "0").
    assert.equal(serial.length % 2, 0, serial);
    const first = Number.parseInt(serial.slice(0, 2), 16);
    assert.ok(first >= 0x01 && first < 0x80, `serial starting with ${first.toString(16)}`);
  }
});

test("every certificate of a cluster parses", () => {
  const pki = createClusterPki("10.0.0.1");
  for (const pair of [pki.ca, pki.apiserver, pki.admin, pki.controllerManager, pki.scheduler]) {
    assert.ok(new X509Certificate(pair.certPem).serialNumber.length > 0);
  }
});
