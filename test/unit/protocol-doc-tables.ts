/**
 * The generated parts of docs/protocol.md: the route table from the route declarations
 * (`ROUTES`, src/protocol/routes.ts) and the error table from `ERROR_STATUS`
 * (src/protocol/errors.ts), each written between its marker comments
 * (`<!-- generated:NAME … -->` … `<!-- /generated:NAME -->`).
 *
 * Guarantees: the tables list every declared route (in document order) and every error code,
 * from the declarations alone; the text around the markers is kept as it is.
 * Does not: format (the caller runs prettier over the result, as `npm run format` would).
 * Used by test/unit/protocol-doc.test.ts, which `npm run docs:protocol` runs with `-u`.
 */
import { ERROR_STATUS, ShiftlockError } from "../../src/protocol/errors.ts";
import type { ErrorCode } from "../../src/protocol/errors.ts";
import type { Repeatable, RouteSpec } from "../../src/protocol/route.ts";
import { routeRepeatable } from "../../src/protocol/route.ts";
import { ROUTES } from "../../src/protocol/routes.ts";

/** The route table's words for a route's {@link Repeatable}. */
const REPEATED: Record<Repeatable, string> = {
  always: "yes",
  withOperationId: "with `operationId`",
  never: "no",
};

/** A markdown table from a header and rows (cells escaped for `|`). */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** One row per declared route: method, path, role, success status, its own codes, whether a client repeats it, summary. */
export function routeTable(routes: readonly RouteSpec[] = ROUTES): string {
  return table(
    ["method", "path", "role", "success", "codes", "repeated", "what"],
    routes.map((route) => [
      `\`${route.method}\``,
      `\`${route.path}\``,
      route.role,
      route.status === 101 ? "101 (WebSocket)" : String(route.status),
      route.errors.map((code) => `\`${code}\``).join(", "),
      REPEATED[routeRepeatable(route)],
      route.summary,
    ]),
  );
}

/** One row per error code: code, HTTP status, the default message. */
export function errorTable(): string {
  const codes = Object.keys(ERROR_STATUS) as ErrorCode[];
  return table(
    ["code", "HTTP", "meaning"],
    codes.map((code) => [`\`${code}\``, String(ERROR_STATUS[code]), new ShiftlockError(code).message]),
  );
}

/** `doc` with the text between each pair of markers replaced by its generated table. */
export function withGeneratedTables(doc: string): string {
  const tables: Record<string, string> = { routes: routeTable(), errors: errorTable() };
  let out = doc;
  for (const [name, body] of Object.entries(tables)) {
    const pattern = new RegExp(`(<!-- generated:${name}\\b[^>]*-->\\n)[\\s\\S]*?(<!-- /generated:${name} -->)`);
    if (!pattern.test(out)) throw new Error(`docs/protocol.md has no <!-- generated:${name} --> markers`);
    out = out.replace(pattern, (_, open: string, close: string) => `${open}\n${body}\n\n${close}`);
  }
  return out;
}
