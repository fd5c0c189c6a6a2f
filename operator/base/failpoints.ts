// Failpoints, as etcd's gofail has them: named places in the code where a test stops the process
// at an exact instant, which no signal sent from outside can hit. Off unless the environment
// names them; each costs one Map lookup when off.
//   APPSTACK_FAILPOINTS="after-ownership-check=App/default/web@2"
// stops this process (SIGSTOP, as a frozen VM or a paused container is) the first time the
// ownership check of App default/web at generation 2 has passed; the test resumes it with SIGCONT.
// A "*" in the subject matches any text (App/default/freeze-a-*@2).

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

/** Whether an armed subject (with "*" for any text) names `subject`. */
function matches(armedFor: string, subject: string): boolean {
  const pattern = armedFor.split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  return new RegExp(`^${pattern}$`).test(subject);
}

/** Freezes this process once at failpoint `name` for `subject`, when the environment arms it. */
export function failpoint(name: string, subject: string): void {
  const armedFor = armed.get(name);
  if (armedFor === undefined || !matches(armedFor, subject)) return;
  armed.delete(name);
  process.kill(process.pid, "SIGSTOP");
}
