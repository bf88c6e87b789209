/**
 * `#pages` (package.json `imports`): the pages' files as src/serve/build-pages.ts writes them
 * into `dist/pages/files.js` before the Worker is bundled, keyed by path (`/ui/app.js`).
 * Declared here so that type-checking needs no build.
 */
declare module "#pages" {
  const files: Readonly<Record<string, string>>;
  export default files;
}
