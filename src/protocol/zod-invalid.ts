/**
 * zod failures as the protocol's `invalid_request`, shared by the server's body validation and the
 * client's in-memory backends so both name the same field for the same bad input.
 *
 * Guarantees: the error's `details.field` is the first unknown key, else the path of the
 * first issue, else the fallback; the message says which field and why.
 */
import type { z } from "zod";
import { ShiftlockError } from "./errors.ts";

/** Turn a zod failure into `invalid_request` naming the field. */
export function invalidFromZod(error: z.ZodError, fallbackField: string): ShiftlockError {
  const issue = error.issues[0];
  const path = issue?.path.map(String).join(".") ?? "";
  const unknownKeys = issue?.code === "unrecognized_keys" ? issue.keys : undefined;
  const field = unknownKeys?.[0] ?? (path === "" ? fallbackField : path);
  const message = unknownKeys !== undefined ? `unknown field "${field}"` : `${field}: ${issue?.message ?? "invalid"}`;
  return new ShiftlockError("invalid_request", message, { field });
}
