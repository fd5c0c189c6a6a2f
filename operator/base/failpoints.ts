// Failpoints, as etcd's gofail has them: named places in the code where a test stops the process
// at an exact instant, which no signal sent from outside can hit. Off unless the environment
// names them; each costs one Map lookup when off.
//   APPSTACK_FAILPOINTS="after-ownership-check=App/default/web"
// stops this process (SIGSTOP, as a frozen VM or a paused container is) the first time the
// ownership check of App default/web has passed; the test resumes it with SIGCONT. A subject
// ending in "*" matches every subject it begins (App/default/freeze-a-*).

const armed = new Map<string, string>(
  (process.env["APPSTACK_FAILPOINTS"] ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [name = "", subject = ""] = entry.split("=");
      return [name, subject] as const;
    }),
);

/** Freezes this process once at failpoint `name` for `subject`, when the environment arms it. */
export function failpoint(name: string, subject: string): void {
  const armedFor = armed.get(name);
  if (armedFor === undefined || (armedFor.endsWith("*") ? !subject.startsWith(armedFor.slice(0, -1)) : armedFor !== subject)) return;
  armed.delete(name);
  process.kill(process.pid, "SIGSTOP");
}
