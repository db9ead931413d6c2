// Byte and time figures as the placement view prints them. Pure.

/** "1.2 KiB" from a byte count ("? B" when unknown). */
export function formatBytes(n) {
  if (n === null || n === undefined) return "? B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let size = n;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
  return unit === 0 ? `${n} B` : `${size.toFixed(1)} ${units[unit]}`;
}

/** "0.25 ms" or "17 µs" from microseconds. */
export function formatMicros(us) {
  if (us === null || us === undefined) return "";
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us} µs`;
}
