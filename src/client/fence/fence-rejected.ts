/**
 * `FenceRejected`: the one error every fence throws when a write presents a token lower
 * than the one it has accepted for that fence key.
 *
 * Guarantees: when thrown by a fence, nothing of the refused write was stored; `key`,
 * `presented` and `accepted` say which fence refused which token and what it holds
 * (`accepted` as read when the refusal was reported: it may have risen since).
 *
 * Does not: carry a `ShiftlockError` code. It is raised by the user's resource, not by the
 * shiftlock service; {@link FenceRejected.toJSON} gives the HTTP body the fence middleware
 * sends (code `fence_rejected`, status 409).
 */
import { formatCounter } from "../../protocol/counter.ts";

/** The `code` of a fence refusal in an HTTP error body. */
export const FENCE_REJECTED_CODE = "fence_rejected";

/** HTTP status of a fence refusal (a conflict with the resource's state, like `stale_token`). */
export const FENCE_REJECTED_STATUS = 409;

export class FenceRejected extends Error {
  override readonly name = "FenceRejected";
  /** Always {@link FENCE_REJECTED_CODE}. */
  readonly code = FENCE_REJECTED_CODE;

  /**
   * @param key The fence key that refused the write.
   * @param presented The token the write carried.
   * @param accepted The highest token the fence had accepted (greater than `presented`).
   */
  constructor(
    readonly key: string,
    readonly presented: bigint,
    readonly accepted: bigint,
  ) {
    super(
      `fence ${JSON.stringify(key)} refused token ${formatCounter(presented)}: it has accepted ${formatCounter(accepted)}`,
    );
  }

  /** The error envelope shiftlock uses on the wire: `{error:{code,message,key,presented,accepted}}`. */
  toJSON(): { error: { code: string; message: string; key: string; presented: string; accepted: string } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        key: this.key,
        presented: formatCounter(this.presented),
        accepted: formatCounter(this.accepted),
      },
    };
  }
}

/** The refusal rule, shared by every fence: lower is refused, equal and higher are accepted. */
export function checkToken(key: string, presented: bigint, accepted: bigint | undefined): void {
  if (accepted !== undefined && presented < accepted) throw new FenceRejected(key, presented, accepted);
}
