/**
 * Wire constants shared by both watches (claims and coord), their Durable Objects and
 * their clients.
 *
 * Guarantees: one spelling of ping/pong (the runtime answers exactly this ping without
 * waking a hibernated object), one close code for a subscriber that fell behind, and one
 * acknowledgement window. Subscribers acknowledge processed events with `{"type":"ack",…}`
 * (workerd gives server sockets no buffered-amount signal; see docs/claims.md "Watch").
 */
import { z } from "zod";

/** The exact ping text the runtime auto-answers. */
export const WATCH_PING_TEXT = '{"type":"ping"}';
/** The auto-response to {@link WATCH_PING_TEXT}. */
export const WATCH_PONG_TEXT = '{"type":"pong"}';

/** WebSocket close code for a subscriber that could not keep up (docs/protocol.md#claims, #coord). */
export const LAGGING_CLOSE_CODE = 4008;

/**
 * Events retained per claim, and publishes per scope, for a watch that resumes (the protocol
 * promises at least this many): one bound for both watches and every backend.
 */
export const RETAINED_EVENTS = 256;

/** Events a subscriber may leave unacknowledged before it is closed with 4008. */
export const WATCH_MAX_UNACKED_EVENTS = 1024;

/** `{"type":"ping"}`: client → server keepalive (either watch). */
export const pingMessageSchema = z.strictObject({ type: z.literal("ping") });
/** `{"type":"pong"}`: the answer to a ping. */
export const pongMessageSchema = z.strictObject({ type: z.literal("pong") });
