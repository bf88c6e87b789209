/**
 * The run's figures, computed from its history alone (so a re-check prints the same ones):
 * ops (calls that reached a server or may have; refused connections are not ops), crashes,
 * pauses, ambiguous (outcome unknown) and refused.
 */
import type { HistoryEntry } from "../history.ts";

export interface Figures {
  ops: number;
  crashes: number;
  pauses: number;
  ambiguous: number;
  refused: number;
}

export function figures(history: readonly HistoryEntry[]): Figures {
  const result: Figures = { ops: 0, crashes: 0, pauses: 0, ambiguous: 0, refused: 0 };
  for (const entry of history) {
    if (entry.t === "fault") {
      if (entry.kind === "crash") result.crashes++;
      if (entry.kind === "pause") result.pauses++;
    } else if (entry.t === "op") {
      if (entry.outcome.type === "error" && entry.outcome.code === "unavailable") {
        result.refused++;
        continue;
      }
      result.ops++;
      if (entry.outcome.type === "unknown") result.ambiguous++;
    }
  }
  return result;
}
