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
