/**
 * The base classes of shiftlock's Durable Objects: the platform entry points every object
 * handles the same way, so the claim, scope and generation objects keep only their rules.
 *
 * Guarantees:
 * - {@link ShiftlockObject}: one clock and one set of limits per object, fixed at
 *   construction (object-settings.ts; nothing public changes them), and one start-up: the
 *   object's stores open (migrations, refusing a newer schema) inside
 *   `blockConcurrencyWhile`, before the object serves anything. A start-up that throws
 *   breaks the object's input gate, so every call fails (`internal` at the router) instead
 *   of reading rows it does not understand.
 * - Every object has one alarm ({@link AlarmSchedule}, its mirror loaded at start-up) and an
 *   {@link IndexOutbox} feeding its namespace's listing index (unless its class is one of the
 *   listing's own, {@link ShiftlockObject.feedsListing}); an entry committed but not
 *   delivered by a previous instance is sent at start-up, however the runtime started the
 *   instance (a named call, or by itself for an alarm: then `ctx.id.name` is undefined and
 *   the outbox row supplies the namespace).
 * - {@link WatchedObject} (claims, scopes) adds the watcher cap (`MAX_WATCHERS_PER_OBJECT`), the runtime's
 *   ping auto-response (answered without waking a hibernated object), the watch upgrade
 *   (400 before upgrading a bad request, 429 over the cap, 401 for a watch ticket used
 *   before or expired, otherwise 101) and the socket
 *   handlers (messages to the fan-out; closes and errors completed quietly).
 * - The 101 carries no `Sec-WebSocket-Protocol`: the bearer token offered as a subprotocol
 *   stays in the router, which adds the echo browsers require to the answer it returns.
 *
 * Does not: decide any rule, or hold state of its own beyond the alarm mirror.
 */
import { DurableObject } from "cloudflare:workers";
import type { Clock } from "../core/clock.ts";
import { errorEnvelope } from "../protocol/errors.ts";
import { WATCH_PING_TEXT, WATCH_PONG_TEXT } from "../protocol/watch.ts";
import { AlarmSchedule } from "./alarm-schedule.ts";
import { IndexOutbox } from "./index-outbox.ts";
import { type MutationSteps, type Mutated, runMutation } from "./mutation.ts";
import { ObjectMeter } from "./object-meter.ts";
import type { Subscribers } from "./fan-out.ts";
import { type ObjectSettings, objectSettings } from "./object-settings.ts";
import { TicketLog, ticketUseOf } from "./ticket-log.ts";
import { closeQuietly, jsonResponse, tooManyWatchers } from "./websocket.ts";

export abstract class ShiftlockObject extends DurableObject<Env> {
  /** Whether objects of this class feed their namespace's listing (the listing's own do not). */
  protected static readonly feedsListing: boolean = true;
  /** The object's one alarm, only ever moved earlier (its mirror loaded at start-up). */
  protected readonly alarms: AlarmSchedule;
  /** What feeds the namespace index (disabled in the index itself). */
  protected readonly outbox: IndexOutbox;
  /** Per-object counters for the scale model (off unless `OBJECT_METER` is "on"). */
  readonly meter: ObjectMeter;

  /**
   * The runtime constructs every object with `(ctx, env)`: production settings. Only a
   * subclass under test/ passes `settings` of its own.
   */
  constructor(
    ctx: DurableObjectState,
    env: Env,
    protected readonly settings: ObjectSettings = objectSettings(env),
  ) {
    super(ctx, env);
    this.meter = new ObjectMeter(ctx, env);
    this.alarms = new AlarmSchedule(ctx.storage, () => this.meter.add("alarmsSet"));
    const feeds = (this.constructor as typeof ShiftlockObject).feedsListing;
    this.outbox = new IndexOutbox(ctx, env, settings, this.alarms, this.meter, feeds);
  }

  /**
   * The object's namespace, however the runtime started this instance: from its name, else
   * (started for an alarm, without one) from its listing outbox row (index-outbox.ts).
   * Undefined when neither has it (the listing switched off, a row of an earlier version).
   */
  protected get namespace(): string | undefined {
    return this.outbox.namespace();
  }

  /** The object's time source (read through the settings at each use). */
  protected get clock(): Clock {
    return this.settings.clock;
  }

  /**
   * Call last in the subclass constructor: `open` runs before the object serves anything
   * (the runtime holds every event until it settles). Then `restage` (an object whose calls
   * do not all stage) stages the listing entry of what the object holds now: the outbox
   * writes nothing when its row already shows that, and otherwise the row catches up with a
   * change an earlier version committed without staging it. Then the alarm mirror is loaded,
   * and a listing entry committed but not yet delivered (by a previous instance, or just now)
   * starts on its way.
   */
  protected startUp(open: () => void | Promise<void>, restage?: () => void): void {
    // A rejection here is the runtime's to handle: it breaks the input gate (see above).
    void this.ctx.blockConcurrencyWhile(async () => {
      await open();
      restage?.();
      await this.alarms.load();
      await this.outbox.kick();
    });
  }

  /** Run one mutation through the template (mutation.ts) with this object's alarm and outbox. */
  protected mutate<Step>(steps: MutationSteps<Step>): Mutated<Step> {
    return runMutation(this.alarms, this.outbox, steps);
  }
}

export abstract class WatchedObject extends ShiftlockObject {
  /** The object's watch subscribers (set by the subclass constructor). */
  protected abstract readonly watchers: Subscribers<unknown>;
  /** Whether an accepted socket counts as a watcher in the namespace's stats (a lease channel does not). */
  protected readonly socketsAreWatchers: boolean = true;
  /** Watch tickets this object accepted (each opens one watch, once). */
  private readonly tickets: TicketLog;

  constructor(ctx: DurableObjectState, env: Env, settings?: ObjectSettings) {
    super(ctx, env, settings);
    this.tickets = new TicketLog(ctx.storage.sql);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair(WATCH_PING_TEXT, WATCH_PONG_TEXT));
  }

  /**
   * Answer a watch upgrade. `params` is undefined when the internal URL was malformed.
   * `register` must accept the server end synchronously (before its first await) so that
   * no event can commit between registration and replay.
   */
  protected async upgrade<P>(
    request: Request,
    params: P | undefined,
    what: string,
    register: (params: P, server: WebSocket) => Promise<void>,
  ): Promise<Response> {
    const ticket = ticketUseOf(new URL(request.url));
    if (
      request.headers.get("Upgrade")?.toLowerCase() !== "websocket" ||
      params === undefined ||
      ticket === "malformed"
    ) {
      return jsonResponse(400, errorEnvelope("invalid_request", "expected a WebSocket upgrade", { field: "Upgrade" }));
    }
    if (this.watchers.count() >= this.settings.maxWatchers) return tooManyWatchers(what);
    if (ticket !== undefined && !this.tickets.accept(ticket, this.clock.nowMs())) {
      return jsonResponse(401, errorEnvelope("unauthorized", "watch ticket already used or expired"));
    }
    const pair = new WebSocketPair();
    await register(params, pair[1]);
    if (this.socketsAreWatchers) this.outbox.count("watchersConnected");
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): void {
    this.watchers.message(ws, message);
  }

  override webSocketClose(ws: WebSocket, _code: number, _reason: string, _wasClean: boolean): void {
    // Complete the closing handshake; 1005/1006 cannot be sent back, so answer 1000.
    closeQuietly(ws, 1000, "closed");
  }

  override webSocketError(ws: WebSocket, _error: unknown): void {
    closeQuietly(ws, 1000, "error");
  }
}
