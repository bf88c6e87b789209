// Placeholder: replaced by the generated document.
export function openApiDocument(): object {
  return { openapi: "3.1.0", info: { title: "shiftlock", version: "0.1.0" }, paths: {} };
}
