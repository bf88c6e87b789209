/**
 * The run's figures, computed from its history alone (so a re-check prints the same ones):
 * ops (calls that reached a server or may have; refused connections are not ops), crashes,
 * pauses, ambiguous (outcome unknown) and refused; and what the sessions did
 * (sessions.ts): keepalives, lease ends, lease channels and their pings, bound claim calls
 * (acquire, prepare, commit with `bound: true`; batches not counted) and those answered,
 * and the session crashes.
 */
import type { HistoryEntry } from "../history.ts";

export interface Figures {
  ops: number;
  crashes: number;
  pauses: number;
  ambiguous: number;
  refused: number;
  sessions: {
    keepalives: number;
    leaseEnds: number;
    channels: number;
    pings: number;
    boundCalls: number;
    boundAnswered: number;
    crashes: number;
  };
}

export function figures(history: readonly HistoryEntry[]): Figures {
  const sessions = { keepalives: 0, leaseEnds: 0, channels: 0, pings: 0, boundCalls: 0, boundAnswered: 0, crashes: 0 };
  const result: Figures = { ops: 0, crashes: 0, pauses: 0, ambiguous: 0, refused: 0, sessions };
  for (const entry of history) {
    if (entry.t === "channel") {
      if (entry.kind === "open") sessions.channels++;
      if (entry.kind === "ping") sessions.pings++;
    } else if (entry.t === "fault") {
      if (entry.kind === "crash") result.crashes++;
      if (entry.kind === "crash" && entry.session !== undefined) sessions.crashes++;
      if (entry.kind === "pause") result.pauses++;
    } else if (entry.t === "op") {
      if (entry.outcome.type === "error" && entry.outcome.code === "unavailable") {
        result.refused++;
        continue;
      }
      result.ops++;
      if (entry.outcome.type === "unknown") result.ambiguous++;
      if (entry.route === "keepaliveGeneration") sessions.keepalives++;
      if (entry.route === "endLeaseGeneration") sessions.leaseEnds++;
      if ((entry.request as { bound?: unknown } | undefined)?.bound === true) {
        sessions.boundCalls++;
        if (entry.outcome.type === "ok") sessions.boundAnswered++;
      }
    }
  }
  return result;
}
