// Tables as kubectl prints them: upper-case headers, columns padded to their widest cell, three
// spaces between; the last column is not padded.
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("   ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join("\n") + "\n";
}

/** An age as kubectl shows it: 45s, 12m, 3h, 5d. */
export function age(since: Date | string, now = new Date()): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - new Date(since).getTime()) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 2 * 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 2 * 86400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}
