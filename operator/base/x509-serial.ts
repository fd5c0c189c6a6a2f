// The serial number of a certificate made here (the local cluster's, the metrics server's own).
import { randomBytes } from "node:crypto";

/**
 * A random serial that is a positive, minimally encoded DER integer: its first byte is non-zero
 * with the high bit clear. A serial whose bytes start with a zero is padded, which OpenSSL refuses
 * ("illegal padding"); with a zero nibble in front of random bytes that was 1 certificate in 256.
 */
export function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes.toString("hex");
}
