// Structured logs: one JSON object a line (for log pipelines), or readable text for a terminal.
// No line carries a known secret (redact.ts: the backend URL's password, quoted in Pulumi's errors).
import { redactKnownSecrets } from "./redact.ts";

export type Level = "debug" | "info" | "warn" | "error";
type Fields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
  with(fields: Fields): Logger;
}

const rank: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface LoggerOptions {
  readonly level?: Level;
  readonly format?: "json" | "text";
  readonly write?: (line: string) => void;
}

function textLine(level: Level, msg: string, fields: Fields): string {
  const rest = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
  return `${new Date().toISOString().slice(11, 19)} ${level.toUpperCase().padEnd(5)} ${msg}${rest ? `  ${rest}` : ""}`;
}

export function createLogger(options: LoggerOptions = {}, bound: Fields = {}): Logger {
  const threshold = rank[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stdout.write(line + "\n"));
  const emit = (level: Level, msg: string, fields: Fields = {}) => {
    if (rank[level] < threshold) return;
    const all = { ...bound, ...fields };
    write(redactKnownSecrets(options.format === "text" ? textLine(level, msg, all) : JSON.stringify({ time: new Date().toISOString(), level, msg, ...all })));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    with: (fields) => createLogger(options, { ...bound, ...fields }),
  };
}
