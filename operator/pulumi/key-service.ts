// The key service that encrypts the stacks' secrets: a loopback endpoint of the operator's own that
// speaks the two calls of HashiCorp Vault's transit engine the Pulumi CLI makes through its
// `hashivault://` secrets provider (encrypt and decrypt one data key).
//
// Why not the passphrase provider: every Pulumi process that opens a passphrase-encrypted stack
// derives its key again (PBKDF2-SHA256, 1,000,000 iterations): 0.2 CPU s, a third of all the CPU of
// an update. With a cloud provider the CLI instead asks the key service once per process to unwrap
// the stack's data key, which costs nothing. The key that wraps the data keys is still derived
// from the passphrase by PBKDF2, but once per salt and operator process, not once per operation.
// No library has these semantics (a Vault transit stand-in backed by a passphrase), and the two
// calls are small. The CLI's use of them is pinned by test/unit/key-service.test.ts, which runs
// the pinned CLI against this service.
import { createCipheriv, createDecipheriv, pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { promisify } from "node:util";

const keyName = "appstack";
/** The stacks' secrets provider: the key service, under the one key name it serves. */
export const secretsProviderUrl = `hashivault://${keyName}`;

// The same derivation Pulumi's passphrase provider uses, so a passphrase is as hard to guess here.
const derivationRounds = 1_000_000;
const wrapVersion = "appstack:v1";

export interface KeyService {
  /** The environment that points a Pulumi process at this service. */
  readonly env: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

export class WrongPassphraseError extends Error {}

/** Wraps and unwraps data keys with keys derived from one passphrase, a key per salt. */
export class PassphraseKeyWrapper {
  readonly #passphrase: string;
  readonly #keys = new Map<string, Promise<Buffer>>();
  /** The salt of the keys this wrapper wraps with: one, so one derivation for every stack it makes. */
  #salt: Buffer | undefined;

  constructor(passphrase: string) {
    this.#passphrase = passphrase;
  }

  #key(salt: Buffer): Promise<Buffer> {
    const id = salt.toString("base64");
    let key = this.#keys.get(id);
    if (!key) {
      key = promisify(pbkdf2)(this.#passphrase, salt, derivationRounds, 32, "sha256");
      this.#keys.set(id, key);
    }
    return key;
  }

  /** `appstack:v1:<salt>:<nonce>:<AES-256-GCM ciphertext and tag>`, all base64. */
  async wrap(plaintext: Buffer): Promise<string> {
    this.#salt ??= randomBytes(16);
    const nonce = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", await this.#key(this.#salt), nonce);
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return [wrapVersion, this.#salt.toString("base64"), nonce.toString("base64"), sealed.toString("base64")].join(":");
  }

  async unwrap(wrapped: string): Promise<Buffer> {
    const parts = wrapped.split(":");
    if (parts.length !== 5 || `${parts[0]}:${parts[1]}` !== wrapVersion) throw new Error(`not a key wrapped by appstack (${wrapVersion})`);
    const [salt, nonce, sealed] = parts.slice(2).map((part) => Buffer.from(part, "base64")) as [Buffer, Buffer, Buffer];
    const decipher = createDecipheriv("aes-256-gcm", await this.#key(salt), nonce);
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - 16)), decipher.final()]);
    } catch {
      throw new WrongPassphraseError("the passphrase does not open this stack's secrets: it is not the one they were encrypted with");
    }
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
}

/** Vault's transit answers: `{ data: { ciphertext } }` and `{ data: { plaintext } }` (base64). */
async function answer(wrapper: PassphraseKeyWrapper, operation: string, body: Record<string, unknown>): Promise<Record<string, string>> {
  if (operation === "encrypt" && typeof body["plaintext"] === "string") {
    return { ciphertext: await wrapper.wrap(Buffer.from(body["plaintext"], "base64")) };
  }
  if (operation === "decrypt" && typeof body["ciphertext"] === "string") {
    return { plaintext: (await wrapper.unwrap(body["ciphertext"])).toString("base64") };
  }
  throw new Error(`no such key service call: ${operation}`);
}

/** Starts the service on a loopback port of its own, with a token that only this process hands out. */
export async function startKeyService(passphrase: string): Promise<KeyService> {
  const wrapper = new PassphraseKeyWrapper(passphrase);
  const token = randomBytes(32).toString("hex");
  const route = new RegExp(`^/v1/transit/(encrypt|decrypt)/${keyName}$`);
  const server = createServer((req, res) => {
    const given = Buffer.from(String(req.headers["x-vault-token"] ?? ""));
    if (given.length !== token.length || !timingSafeEqual(given, Buffer.from(token))) return send(res, 403, { errors: ["permission denied"] });
    const operation = route.exec(req.url ?? "")?.[1];
    if (!operation || (req.method !== "PUT" && req.method !== "POST")) return send(res, 404, { errors: [`no such key service path: ${req.method} ${req.url}`] });
    readJson(req)
      .then((body) => answer(wrapper, operation, body))
      .then((data) => send(res, 200, { data }))
      .catch((error: unknown) => send(res, 400, { errors: [`appstack key service: ${error instanceof Error ? error.message : String(error)}`] }));
  });
  // Deadline of every call: the CLI asks once per process; a stuck connection must not pin it.
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  server.unref(); // the service lives as long as the process, and never keeps it alive alone
  const { port } = server.address() as AddressInfo;
  return {
    env: { VAULT_SERVER_URL: `http://127.0.0.1:${port}`, VAULT_SERVER_TOKEN: token },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
