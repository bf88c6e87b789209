/**
 * How the pages write durations: as people read them ("59 min", "2 h 5 min", "4.2 s"), never
 * a raw count of seconds. Pure functions of their arguments (unit-tested in
 * test/unit/page-format.test.ts).
 *
 * Guarantees: at most two units, the larger first; a value is truncated, never rounded up,
 * so a countdown never shows more time than is left. Does not: localize.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** `ms` (≥ 0; negative counts as 0) as people read it. */
export function formatDuration(ms: number): string {
  const d = Math.max(0, Math.floor(ms));
  if (d < 10 * SECOND) return `${(Math.floor(d / 100) / 10).toFixed(1)} s`;
  if (d < MINUTE) return `${Math.floor(d / SECOND)} s`;
  if (d < 10 * MINUTE) return pair(d, MINUTE, "min", SECOND, "s");
  if (d < HOUR) return `${Math.floor(d / MINUTE)} min`;
  if (d < DAY) return pair(d, HOUR, "h", MINUTE, "min");
  return pair(d, DAY, "d", HOUR, "h");
}

/** "3 min 12 s", or "3 min" when the smaller unit is 0. */
function pair(ms: number, big: number, bigUnit: string, small: number, smallUnit: string): string {
  const whole = Math.floor(ms / big);
  const rest = Math.floor((ms - whole * big) / small);
  return rest === 0 ? `${whole} ${bigUnit}` : `${whole} ${bigUnit} ${rest} ${smallUnit}`;
}

/** How long ago `atMs` was, seen at `nowMs` ("just now" within a second). */
export function formatAgo(atMs: number, nowMs: number): string {
  const ms = nowMs - atMs;
  return ms < SECOND ? "just now" : `${formatDuration(ms)} ago`;
}
