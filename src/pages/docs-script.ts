/**
 * The script of `GET /docs` (served as `/docs/app.js`): an interactive reference rendered in
 * the browser from `/openapi.json`, the document generated from the route declarations.
 *
 * Guarantees:
 * - Everything it shows comes from `/openapi.json` of the same server: no CDN, no other
 *   origin, works offline. Text from the document is inserted with `textContent`, never as
 *   HTML, so nothing in it can run.
 * - The token the user enters is kept in `sessionStorage` (this tab only) and sent only to
 *   this origin, in the `Authorization` header of the requests the user sends from the page;
 *   `/docs#token=T` stores T and removes it from the address bar. Fragments never reach the
 *   server.
 * - "Send" performs exactly the request the form shows and prints the status and body.
 *
 * Does not: open WebSockets (watch routes show their message schemas instead), or validate
 * input before sending: the server's answer, 4xx included, is the point.
 *
 * It is plain browser JavaScript in a string (the Worker's type environment has no DOM),
 * tested end to end in headless Chromium by test/e2e/docs-page.test.ts.
 */
import { PAGE_COMMON } from "./page-common.ts";

export const DOCS_SCRIPT = String.raw`"use strict";
(function () {
${PAGE_COMMON}
  var spec;

  function resolve(node, depth, seen) {
    if (depth > 12 || node === null || typeof node !== "object") return node;
    if (Array.isArray(node)) return node.map(function (x) { return resolve(x, depth + 1, seen); });
    if (typeof node.$ref === "string") {
      var ref = node.$ref;
      if (seen.indexOf(ref) >= 0) return { $ref: ref };
      var target = ref.replace(/^#\//, "").split("/").reduce(function (o, k) { return o && o[k]; }, spec);
      return resolve(target, depth + 1, seen.concat([ref]));
    }
    var out = {};
    Object.keys(node).forEach(function (k) { out[k] = resolve(node[k], depth + 1, seen); });
    return out;
  }

  function errorCodes(schema) {
    var found = [];
    (function walk(s) {
      if (s === null || typeof s !== "object") return;
      if (s.properties && s.properties.code) {
        var c = s.properties.code;
        if (Array.isArray(c.enum)) found = found.concat(c.enum);
        else if (typeof c.const === "string") found.push(c.const);
      }
      Object.keys(s).forEach(function (k) { walk(s[k]); });
    })(schema);
    return found.filter(function (c, i) { return found.indexOf(c) === i; });
  }

  function pre(value) {
    return el("pre", { class: "schema", text: JSON.stringify(value, null, 2) });
  }

  function tryForm(path, method, op) {
    var params = (op.parameters || []).filter(function (p) { return p.in === "path" || p.in === "query"; });
    var form = el("form", { class: "try", "aria-label": "Try " + op.operationId });
    params.forEach(function (p) {
      var id = op.operationId + "-" + p.name;
      var input = el("input", { id: id, name: p.name, "data-in": p.in, autocomplete: "off" });
      if (p.required) input.required = true;
      if (p.name === "ns") input.value = sessionStorage.getItem(NS_KEY) || "";
      form.appendChild(el("div", { class: "field" }, [
        el("label", { for: id, text: p.name + " (" + p.in + (p.required ? ", required" : "") + ")" }), input,
      ]));
    });
    var body = null;
    if (op.requestBody) {
      var bodyId = op.operationId + "-body";
      body = el("textarea", { id: bodyId, name: "body", rows: "4", spellcheck: "false" });
      body.value = "{}";
      form.appendChild(el("div", { class: "field" }, [el("label", { for: bodyId, text: "JSON body" }), body]));
    }
    var result = el("pre", { class: "result", "aria-live": "polite" });
    form.appendChild(el("button", { type: "submit", text: "Send " + method.toUpperCase() }));
    form.appendChild(result);
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var url = path;
      var query = new URLSearchParams();
      params.forEach(function (p) {
        var value = form.elements.namedItem(p.name).value;
        if (p.in === "path") url = url.replace("{" + p.name + "}", encodeURIComponent(value));
        else if (value !== "") query.set(p.name, value);
      });
      if (query.toString() !== "") url += "?" + query.toString();
      var headers = {};
      if (token() !== "" && op["x-shiftlock-role"]) headers.Authorization = "Bearer " + token();
      var init = { method: method.toUpperCase(), headers: headers };
      if (body !== null) {
        headers["Content-Type"] = "application/json";
        init.body = body.value;
      }
      result.textContent = method.toUpperCase() + " " + url + " …";
      fetch(url, init).then(function (res) {
        return res.text().then(function (text) {
          var shown = text;
          try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { /* not JSON */ }
          result.textContent = res.status + " " + res.statusText + "\n" + shown;
          result.setAttribute("data-status", String(res.status));
        });
      }, function (err) {
        result.textContent = "request failed: " + err;
        result.setAttribute("data-status", "error");
      });
    });
    return form;
  }

  function operationView(path, method, op) {
    var role = op["x-shiftlock-role"] || "none";
    var summary = el("summary", {}, [
      el("span", { class: "method " + method, text: method.toUpperCase() }), " ",
      el("code", { class: "path", text: path }), " ",
      el("span", { class: "summary", text: op.summary || "" }), " ",
      el("span", { class: "role", text: role === "none" ? "no token" : role + " token" }),
    ]);
    var parts = [summary];
    if (op.description) parts.push(el("p", { text: op.description }));
    var params = (op.parameters || []);
    if (params.length > 0) {
      parts.push(el("h4", { text: "Parameters" }));
      parts.push(el("table", {}, [
        el("thead", {}, [el("tr", {}, [el("th", { text: "name" }), el("th", { text: "in" }), el("th", { text: "required" }), el("th", { text: "schema" })])]),
        el("tbody", {}, params.map(function (p) {
          return el("tr", {}, [el("td", {}, [el("code", { text: p.name })]), el("td", { text: p.in }),
            el("td", { text: p.required ? "yes" : "no" }), el("td", {}, [el("code", { text: JSON.stringify(resolve(p.schema, 0, [])) })])]);
        })),
      ]));
    }
    if (op.requestBody) {
      parts.push(el("h4", { text: "Request body" }));
      parts.push(pre(resolve(op.requestBody.content["application/json"].schema, 0, [])));
    }
    parts.push(el("h4", { text: "Responses" }));
    var list = el("ul", { class: "responses" });
    Object.keys(op.responses).forEach(function (status) {
      var response = resolve(op.responses[status], 0, []);
      var codes = errorCodes(response);
      list.appendChild(el("li", { "data-status": status }, [
        el("strong", { text: status }), " " + (response.description || ""),
        codes.length > 0 ? el("span", { class: "codes", text: " — " + codes.join(", ") }) : null,
      ]));
    });
    parts.push(list);
    var ok = resolve(op.responses[Object.keys(op.responses)[0]], 0, []);
    if (ok.content && ok.content["application/json"]) parts.push(el("details", {}, [el("summary", { text: "Success schema" }), pre(ok.content["application/json"].schema)]));
    if (op["x-websocket"]) {
      parts.push(el("h4", { text: "WebSocket" }));
      parts.push(pre(resolve(op["x-websocket"], 0, [])));
    } else {
      parts.push(el("h4", { text: "Try it" }));
      parts.push(tryForm(path, method, op));
    }
    var text = (method + " " + path + " " + (op.summary || "") + " " + op.operationId).toLowerCase();
    return el("details", { class: "op", id: "op-" + op.operationId, "data-operation-id": op.operationId, "data-search": text }, parts);
  }

  function render() {
    document.getElementById("title").textContent = spec.info.title + " API " + spec.info.version;
    document.getElementById("intro").textContent = spec.info.description || "";
    var main = document.getElementById("operations");
    main.textContent = "";
    var tags = (spec.tags || []).map(function (t) { return t.name; });
    var byTag = {};
    Object.keys(spec.paths).forEach(function (path) {
      Object.keys(spec.paths[path]).forEach(function (method) {
        var op = spec.paths[path][method];
        var tag = (op.tags && op.tags[0]) || "other";
        if (tags.indexOf(tag) < 0) tags.push(tag);
        (byTag[tag] = byTag[tag] || []).push(operationView(path, method, op));
      });
    });
    tags.forEach(function (tag) {
      if (!byTag[tag]) return;
      var described = (spec.tags || []).filter(function (t) { return t.name === tag; })[0];
      main.appendChild(el("section", { "aria-labelledby": "tag-" + tag }, [
        el("h2", { id: "tag-" + tag, text: tag }),
        described && described.description ? el("p", { text: described.description }) : null,
      ].concat(byTag[tag])));
    });
    document.body.setAttribute("data-ready", "true");
  }

  function filter(text) {
    var needle = text.trim().toLowerCase();
    document.querySelectorAll("details.op").forEach(function (d) {
      d.hidden = needle !== "" && d.getAttribute("data-search").indexOf(needle) < 0;
    });
  }

  takeTokenFromFragment();
  var tokenInput = document.getElementById("token");
  var nsInput = document.getElementById("namespace");
  tokenInput.value = token();
  nsInput.value = sessionStorage.getItem(NS_KEY) || "";
  tokenInput.addEventListener("input", function () { sessionStorage.setItem(TOKEN_KEY, tokenInput.value); });
  nsInput.addEventListener("input", function () {
    sessionStorage.setItem(NS_KEY, nsInput.value);
    document.querySelectorAll("input[name=ns]").forEach(function (i) { i.value = nsInput.value; });
  });
  document.getElementById("filter").addEventListener("input", function (e) { filter(e.target.value); });

  fetch("/openapi.json").then(function (res) { return res.json(); }).then(function (doc) {
    spec = doc;
    render();
  }, function (err) {
    document.getElementById("operations").textContent = "could not load /openapi.json: " + err;
  });
})();
`;
