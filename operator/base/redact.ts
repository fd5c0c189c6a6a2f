// Credentials never reach a log line: a backend URL may carry them (postgres://user:password@...,
// an access key or a SAS token in the query string), and is shown with them replaced.
const secretParameter = /key|secret|token|password|passwd|sig|credential|auth/i;

/** `url` with its password and every query value that looks like a credential replaced by "***". */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not a URL: it cannot be told apart from a secret, so none of it is shown.
    return "***";
  }
  if (parsed.password) parsed.password = "***";
  for (const name of [...parsed.searchParams.keys()]) if (secretParameter.test(name)) parsed.searchParams.set(name, "***");
  return parsed.href.replaceAll("%2A%2A%2A", "***");
}

/**
 * The credentials of the backend URL this process uses. Pulumi's own errors quote the URL as given
 * ("unable to open state database \"postgres://user:password@...\""), and an error's text reaches
 * log lines, Events and the object's status: each of those passes through redactKnownSecrets.
 */
const knownSecrets = new Set<string>();

/** Too short a secret would replace ordinary words; such a password is left to redactUrl's parsing. */
const shortestKnownSecret = 6;

/** Remembers the password and credential-like query values of `url`, in every spelling a message may quote. */
export function keepSecretsOf(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return;
  }
  const secrets = [parsed.password, ...[...parsed.searchParams.entries()].filter(([name]) => secretParameter.test(name)).map(([, value]) => value)];
  for (const secret of secrets) {
    for (const spelling of [secret, safeDecode(secret), encodeURIComponent(secret)]) if (spelling.length >= shortestKnownSecret) knownSecrets.add(spelling);
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `value` (a string, or the strings inside an object) with every known secret replaced by "***". */
export function redactKnownSecrets<T>(value: T): T {
  if (!knownSecrets.size) return value;
  const redact = (text: string) => [...knownSecrets].reduce((result, secret) => result.replaceAll(secret, "***"), text);
  if (typeof value === "string") return redact(value) as T;
  if (value === null || typeof value !== "object") return value;
  return JSON.parse(redact(JSON.stringify(value))) as T;
}
