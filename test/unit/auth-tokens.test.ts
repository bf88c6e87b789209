// Token configuration, authentication, authorization and how a token is presented
// (docs/protocol.md#authentication-and-roles), independent of the router.
import { describe, expect, it } from "vitest";
import {
  authenticate,
  authorize,
  parseTokenConfig,
  presentedToken,
  BEARER_SUBPROTOCOL_PREFIX,
  VERIFIED_DIGESTS_CACHED,
} from "../../src/http/auth.ts";
import { ShiftlockError } from "../../src/protocol/errors.ts";
import { ROUTES } from "../../src/protocol/routes.ts";

const CONFIG = JSON.stringify([
  { token: "writer-everything", role: "write", namespaces: "*" },
  { token: "reader-everything", role: "read", namespaces: "*" },
  { token: "writer-billing-and-ops", role: "write", namespaces: ["billing", "ops"] },
  { token: "reader-billing", role: "read", namespaces: ["billing"], name: "billing-dashboard" },
  { token: "operator-everything", role: "admin", namespaces: "*", name: "on-call" },
]);

function internalMessage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ShiftlockError);
    expect((err as ShiftlockError).code).toBe("internal");
    return (err as ShiftlockError).message;
  }
  throw new Error("expected a throw");
}

describe("parseTokenConfig", () => {
  it("reads a list of tokens with roles, namespace lists and names (token#<position> when unnamed)", () => {
    expect(parseTokenConfig(CONFIG).map((t) => t.grant)).toEqual([
      { role: "write", namespaces: "*", name: "token#0" },
      { role: "read", namespaces: "*", name: "token#1" },
      { role: "write", namespaces: ["billing", "ops"], name: "token#2" },
      { role: "read", namespaces: ["billing"], name: "billing-dashboard" },
      { role: "admin", namespaces: "*", name: "on-call" },
    ]);
  });

  it("accepts the older form (no name, read or write) unchanged", () => {
    const older = JSON.stringify([{ token: "older-config", role: "write", namespaces: ["a"] }]);
    expect(parseTokenConfig(older)).toEqual([
      { token: "older-config", grant: { role: "write", namespaces: ["a"], name: "token#0" } },
    ]);
  });

  it("treats an absent or blank value as no tokens (every request is refused)", () => {
    expect(parseTokenConfig(undefined)).toEqual([]);
    expect(parseTokenConfig("  \n")).toEqual([]);
    expect(parseTokenConfig("[]")).toEqual([]);
  });

  it.each([
    ["not JSON", "{"],
    ["an object instead of a list", JSON.stringify({ token: "abcdefgh", role: "write", namespaces: "*" })],
    ["a short token", JSON.stringify([{ token: "short", role: "write", namespaces: "*" }])],
    ["a token with a space", JSON.stringify([{ token: "has a space", role: "write", namespaces: "*" }])],
    ["an unknown role", JSON.stringify([{ token: "abcdefgh", role: "root", namespaces: "*" }])],
    ["an empty name", JSON.stringify([{ token: "abcdefgh", role: "read", namespaces: "*", name: "" }])],
    ["a name with a newline", JSON.stringify([{ token: "abcdefgh", role: "read", namespaces: "*", name: "a\nb" }])],
    ["an empty namespace list", JSON.stringify([{ token: "abcdefgh", role: "read", namespaces: [] }])],
    ["an unknown field", JSON.stringify([{ token: "abcdefgh", role: "read", namespaces: "*", ttl: 1 }])],
    ["a missing role", JSON.stringify([{ token: "abcdefgh", namespaces: "*" }])],
  ])("fails closed on %s", (_what, config) => {
    internalMessage(() => parseTokenConfig(config));
  });

  it("refuses a token listed twice, without printing it", () => {
    const config = JSON.stringify([
      { token: "duplicate-secret", role: "read", namespaces: "*" },
      { token: "duplicate-secret", role: "write", namespaces: "*" },
    ]);
    const message = internalMessage(() => parseTokenConfig(config));
    expect(message).not.toContain("duplicate-secret");
  });

  it("never puts a token in a schema error", () => {
    const config = JSON.stringify([{ token: "secret with space", role: "write", namespaces: "*" }]);
    expect(internalMessage(() => parseTokenConfig(config))).not.toContain("secret");
  });
});

describe("authenticate", () => {
  it("finds each token's own grant among several", async () => {
    expect(await authenticate(CONFIG, "writer-everything")).toEqual({
      role: "write",
      namespaces: "*",
      name: "token#0",
    });
    expect(await authenticate(CONFIG, "reader-billing")).toEqual({
      role: "read",
      namespaces: ["billing"],
      name: "billing-dashboard",
    });
    expect(await authenticate(CONFIG, "operator-everything")).toEqual({
      role: "admin",
      namespaces: "*",
      name: "on-call",
    });
    expect(await authenticate(CONFIG, "writer-billing-and-ops")).toEqual({
      role: "write",
      namespaces: ["billing", "ops"],
      name: "token#2",
    });
  });

  it("refuses unknown tokens, prefixes and extensions of real ones", async () => {
    for (const token of ["nope-nope-nope", "writer-everythin", "writer-everything2", "WRITER-EVERYTHING", ""]) {
      expect(await authenticate(CONFIG, token)).toBeUndefined();
    }
  });

  it("refuses everything when no tokens are configured", async () => {
    expect(await authenticate(undefined, "dev-token")).toBeUndefined();
    expect(await authenticate("", "dev-token")).toBeUndefined();
  });

  it("refuses a token removed by a rotation, although it was verified (and remembered) before", async () => {
    const before = JSON.stringify([
      { token: "rotated-out-token", role: "write", namespaces: "*" },
      { token: "staying-token", role: "read", namespaces: "*" },
    ]);
    const after = JSON.stringify([{ token: "staying-token", role: "read", namespaces: "*" }]);
    expect(await authenticate(before, "rotated-out-token")).toEqual({
      role: "write",
      namespaces: "*",
      name: "token#0",
    });
    expect(await authenticate(before, "rotated-out-token")).toEqual({
      role: "write",
      namespaces: "*",
      name: "token#0",
    });
    expect(await authenticate(after, "rotated-out-token")).toBeUndefined();
    expect(await authenticate(after, "staying-token")).toEqual({ role: "read", namespaces: "*", name: "token#0" });
    // A role changed for the same token takes effect at once too.
    const demoted = JSON.stringify([{ token: "staying-token", role: "read", namespaces: ["billing"] }]);
    expect(await authenticate(demoted, "staying-token")).toEqual({
      role: "read",
      namespaces: ["billing"],
      name: "token#0",
    });
  });

  it(`grants correctly past the ${VERIFIED_DIGESTS_CACHED} remembered verifications (evicted ones verify again)`, async () => {
    const tokens = Array.from({ length: VERIFIED_DIGESTS_CACHED + 50 }, (_, i) => ({
      token: `token-number-${i}`,
      role: i % 2 === 0 ? "write" : "read",
      namespaces: [`ns-${i}`],
    }));
    const config = JSON.stringify(tokens);
    for (let pass = 0; pass < 2; pass++) {
      for (const [i, t] of tokens.entries()) {
        expect(await authenticate(config, t.token)).toEqual({
          role: t.role,
          namespaces: [`ns-${i}`],
          name: `token#${i}`,
        });
      }
    }
    expect(await authenticate(config, "token-number-x")).toBeUndefined();
  });

  it("rejects (does not cache) a broken configuration", async () => {
    await expect(authenticate("[oops", "whatever-token")).rejects.toMatchObject({ code: "internal" });
    await expect(authenticate("[oops", "whatever-token")).rejects.toMatchObject({ code: "internal" });
  });
});

describe("authorize", () => {
  const code = (fn: () => void): string | undefined => {
    try {
      fn();
      return undefined;
    } catch (err) {
      return (err as ShiftlockError).code;
    }
  };

  it("lets write tokens call every role's routes but evict in their namespaces", () => {
    for (const role of ["none", "read", "write"] as const) {
      const limited = { role: "write", namespaces: ["billing", "ops"], name: "w" } as const;
      expect(code(() => authorize(limited, "ops", role))).toBeUndefined();
      expect(code(() => authorize({ role: "write", namespaces: "*", name: "w" }, "anything", role))).toBeUndefined();
    }
    expect(code(() => authorize({ role: "write", namespaces: "*", name: "w" }, "ops", "admin"))).toBe("forbidden");
  });

  it("lets admin tokens call every route, evict included, and only in their namespaces", () => {
    for (const role of ["none", "read", "write", "admin"] as const) {
      expect(code(() => authorize({ role: "admin", namespaces: ["ops"], name: "a" }, "ops", role))).toBeUndefined();
    }
    expect(code(() => authorize({ role: "admin", namespaces: ["ops"], name: "a" }, "billing", "admin"))).toBe(
      "forbidden",
    );
  });

  it("limits read tokens to read routes (GET and watch)", () => {
    const grant = { role: "read", namespaces: "*", name: "r" } as const;
    expect(code(() => authorize(grant, "billing", "read"))).toBeUndefined();
    expect(code(() => authorize(grant, "billing", "write"))).toBe("forbidden");
    expect(code(() => authorize(grant, "billing", "admin"))).toBe("forbidden");
  });

  it("forbids namespaces outside the list, matching names exactly", () => {
    const grant = { role: "write", namespaces: ["billing"], name: "w" } as const;
    for (const ns of ["ops", "Billing", "billing ", "billin", "billing2"]) {
      expect(code(() => authorize(grant, ns, "read"))).toBe("forbidden");
    }
  });

  it("gives every /v1 route the role of its method — read for GET (watch included), write otherwise — but a watch ticket, which only reads, the lease channel, which keeps a lease, and evict, which is admin", () => {
    for (const route of ROUTES.filter((r) => r.role !== "none")) {
      const keepsLease = route.operationId === "generationLeaseChannel";
      const read = (route.method === "GET" && !keepsLease) || route.operationId === "issueWatchTicket";
      const expected = read ? "read" : route.path.endsWith("/evict") ? "admin" : "write";
      expect(route.role, route.operationId).toBe(expected);
    }
  });
});

describe("presentedToken", () => {
  const headers = (init: Record<string, string>) => new Headers(init);

  it("reads Authorization: Bearer, case-insensitively on the scheme", () => {
    expect(presentedToken(headers({ Authorization: "Bearer abc.def-123" }))).toEqual({ token: "abc.def-123" });
    expect(presentedToken(headers({ Authorization: "bearer abc" }))).toEqual({ token: "abc" });
  });

  it.each(["", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer two tokens", "Token abc"])(
    "treats a malformed header %j as no token",
    (value) => {
      expect(presentedToken(headers({ Authorization: value }))).toBeUndefined();
    },
  );

  it("reads the subprotocol token on a WebSocket upgrade and remembers the subprotocol", () => {
    const h = headers({ Upgrade: "websocket", "Sec-WebSocket-Protocol": `other, ${BEARER_SUBPROTOCOL_PREFIX}tok123` });
    expect(presentedToken(h)).toEqual({ token: "tok123", subprotocol: "shiftlock.bearer.tok123" });
  });

  it("ignores the subprotocol outside an upgrade, and an empty subprotocol token", () => {
    expect(presentedToken(headers({ "Sec-WebSocket-Protocol": "shiftlock.bearer.tok123" }))).toBeUndefined();
    expect(
      presentedToken(headers({ Upgrade: "websocket", "Sec-WebSocket-Protocol": "shiftlock.bearer." })),
    ).toBeUndefined();
  });

  it("prefers the header when both are present, and a bad header is not rescued by a subprotocol", () => {
    const both = { Upgrade: "websocket", "Sec-WebSocket-Protocol": "shiftlock.bearer.sub-token" };
    expect(presentedToken(headers({ ...both, Authorization: "Bearer header-token" }))).toEqual({
      token: "header-token",
    });
    expect(presentedToken(headers({ ...both, Authorization: "Basic x" }))).toBeUndefined();
  });
});
