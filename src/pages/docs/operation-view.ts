/**
 * One operation of the /docs page: its summary line, parameters, request body, responses
 * (each status with only the codes its route declares) and, for plain HTTP routes, a "Try it"
 * form. Watch routes show their message schemas instead (the page opens no WebSocket).
 *
 * Guarantees: "Send" performs exactly the request the form shows — the token goes only to
 * this origin, in the `Authorization` header, and only to routes that take one — and prints
 * the status and body. Input is not validated first: the server's answer, 4xx included, is
 * the point. Everything from the document is inserted as text.
 */
import { el, token } from "../dom.ts";
import {
  at,
  resolve,
  responseCodes,
  responseObject,
  type Json,
  type OpenApiDocument,
  type Operation,
  type Parameter,
} from "./openapi.ts";

function pre(value: Json): HTMLElement {
  return el("pre", { class: "schema", text: JSON.stringify(value, null, 2) });
}

function tryForm(path: string, method: string, op: Operation): HTMLFormElement {
  const params = (op.parameters ?? []).filter((p) => p.in === "path" || p.in === "query");
  const form = el("form", { class: "try", "aria-label": `Try ${op.operationId}` }) as HTMLFormElement;
  const inputs = params.map((p) => {
    const id = `${op.operationId}-${p.name}`;
    const input = el("input", { id, name: p.name, "data-in": p.in, autocomplete: "off" }) as HTMLInputElement;
    input.required = p.required === true;
    const label = `${p.name} (${p.in}${p.required === true ? ", required" : ""})`;
    form.append(el("div", { class: "field" }, [el("label", { for: id, text: label }), input]));
    return { param: p, input };
  });
  let body: HTMLTextAreaElement | undefined;
  if (op.requestBody !== undefined) {
    const bodyId = `${op.operationId}-body`;
    body = el("textarea", { id: bodyId, name: "body", rows: "4", spellcheck: "false" }) as HTMLTextAreaElement;
    body.value = "{}";
    form.append(el("div", { class: "field" }, [el("label", { for: bodyId, text: "JSON body" }), body]));
  }
  const result = el("pre", { class: "result", "aria-live": "polite" });
  form.append(el("button", { type: "submit", text: `Send ${method.toUpperCase()}` }), result);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    for (const { param, input } of inputs) {
      if (param.in === "path") url = url.replace(`{${param.name}}`, encodeURIComponent(input.value));
      else if (input.value !== "") query.set(param.name, input.value);
    }
    if (query.size > 0) url += `?${query.toString()}`;
    const headers: Record<string, string> = {};
    if (token() !== "" && op["x-shiftlock-role"] !== undefined) headers["Authorization"] = `Bearer ${token()}`;
    const init: RequestInit = { method: method.toUpperCase(), headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = body.value;
    }
    result.textContent = `${method.toUpperCase()} ${url} …`;
    fetch(url, init).then(
      async (res) => {
        const text = await res.text();
        let shown = text;
        try {
          shown = JSON.stringify(JSON.parse(text), null, 2);
        } catch {
          // not JSON: shown as it came
        }
        result.textContent = `${res.status} ${res.statusText}\n${shown}`;
        result.setAttribute("data-status", String(res.status));
      },
      (err: unknown) => {
        result.textContent = `request failed: ${String(err)}`;
        result.setAttribute("data-status", "error");
      },
    );
  });
  return form;
}

/** A table in its scrolling box (style.css `.table`): wider than the screen, it scrolls, not the page. */
function table(head: readonly string[], rows: readonly (readonly (string | Node)[])[]): HTMLElement {
  const header = el("thead", {}, [
    el(
      "tr",
      {},
      head.map((text) => el("th", { text })),
    ),
  ]);
  const body = el(
    "tbody",
    {},
    rows.map((cells) =>
      el(
        "tr",
        {},
        cells.map((c) => el("td", {}, [c])),
      ),
    ),
  );
  return el("div", { class: "table" }, [el("table", {}, [header, body])]);
}

/**
 * A parameter's description — its own, else its schema's — and its schema without it, so
 * the text shows once. A name's limit (1..256 bytes of UTF-8) is only in the description:
 * JSON Schema's `maxLength` counts characters, not bytes.
 */
function describeParameter(doc: OpenApiDocument, p: Parameter): [string, Json] {
  const schema = resolve(doc, p.schema);
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return [p.description ?? "", schema];
  const { description, ...rest } = schema;
  return [p.description ?? (typeof description === "string" ? description : ""), rest];
}

/** The `<details>` of one operation. */
export function operationView(doc: OpenApiDocument, path: string, method: string, op: Operation): HTMLElement {
  const role = op["x-shiftlock-role"] ?? "none";
  const parts: (HTMLElement | null)[] = [
    el("summary", {}, [
      el("span", { class: `method ${method}`, text: method.toUpperCase() }),
      " ",
      el("code", { class: "path", text: path }),
      " ",
      el("span", { class: "summary", text: op.summary ?? "" }),
      " ",
      el("span", { class: "role", text: role === "none" ? "no token" : `${role} token` }),
    ]),
  ];
  if (op.description !== undefined) parts.push(el("p", { text: op.description }));
  const params = op.parameters ?? [];
  if (params.length > 0) {
    parts.push(el("h4", { text: "Parameters" }));
    parts.push(
      table(
        ["name", "in", "required", "description", "schema"],
        params.map((p) => {
          const [description, schema] = describeParameter(doc, p);
          return [
            el("code", { text: p.name }),
            p.in,
            p.required === true ? "yes" : "no",
            description,
            el("code", { text: JSON.stringify(schema) }),
          ];
        }),
      ),
    );
  }
  if (op.requestBody !== undefined) {
    parts.push(
      el("h4", { text: "Request body" }),
      pre(resolve(doc, op.requestBody.content["application/json"].schema)),
    );
  }
  parts.push(el("h4", { text: "Responses" }));
  const list = el("ul", { class: "responses" });
  for (const [status, response] of Object.entries(op.responses)) {
    const described = responseObject(doc, response);
    const codes = responseCodes(doc, response);
    const description = typeof described["description"] === "string" ? described["description"] : "";
    list.append(
      el("li", { "data-status": status }, [
        el("strong", { text: status }),
        // The description repeats the codes after a colon (src/http/openapi.ts); they are shown once, below.
        ` ${codes.length > 0 ? description.replace(/:.*$/, "") : description}`,
        codes.length > 0
          ? el("span", { class: "codes", "data-codes": codes.join(" "), text: ` — ${codes.join(", ")}` })
          : null,
      ]),
    );
  }
  parts.push(list);
  const [success] = Object.values(op.responses);
  const schema = at(resolve(doc, success), "content", "application/json", "schema");
  if (schema !== undefined) parts.push(el("details", {}, [el("summary", { text: "Success schema" }), pre(schema)]));
  if (op["x-websocket"] !== undefined) {
    parts.push(el("h4", { text: "WebSocket" }), pre(resolve(doc, op["x-websocket"])));
  } else {
    parts.push(el("h4", { text: "Try it" }), tryForm(path, method, op));
  }
  const search = `${method} ${path} ${op.summary ?? ""} ${op.operationId}`.toLowerCase();
  return el(
    "details",
    { class: "op", id: `op-${op.operationId}`, "data-operation-id": op.operationId, "data-search": search },
    parts.filter((p): p is HTMLElement => p !== null),
  );
}
