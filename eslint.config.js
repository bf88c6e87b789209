// Type-aware lint of every source file, TypeScript and the JavaScript (.mjs/.js) alike: the
// JavaScript is type-checked by tsc too (tsconfig `checkJs`, JSDoc types). The rules that
// matter most here: an un-awaited promise in a Durable Object (storage call, alarm, send) is
// a correctness bug, so floating/misused promises are errors.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/**
 * `no-restricted-imports` patterns that confine a folder: relative imports may climb to
 * `up` (the `src/` level, as written from the file) only into the `allowed` folders, and
 * the only packages are zod and those in `packages`.
 * @param {string} up
 * @param {string[]} allowed
 * @param {string[]} [packages]
 */
function layerPatterns(up, allowed, packages = []) {
  const escaped = up.replaceAll(".", "\\.");
  return [
    {
      regex: `^${escaped}(?!(?:${allowed.join("|")})/)`,
      message: `this layer may import only src/{${allowed.join(",")}} and itself (see docs/architecture.md)`,
    },
    { regex: `^${escaped}\\.\\./`, message: "this layer may not reach above src/" },
    {
      regex: `^(?!\\.|zod$${packages.map((p) => `|${p}$`).join("")})`,
      message: `this layer may import no package but ${["zod", ...packages].join(", ")}`,
    },
  ];
}

export default tseslint.config(
  { ignores: ["node_modules", "dist", "lib", ".wrangler", "src/env.d.ts", "examples/*/{node_modules,dist}/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-console": ["error", { allow: ["warn", "error"] }],
    },
  },
  // The examples are projects of their own that import the installed package; here they are
  // checked against the sources (tsconfig.examples.json maps `shiftlock/client` to them).
  {
    files: ["examples/**/*.ts"],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: "./tsconfig.examples.json",
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  // The client runs in Node, browsers and Workers and ships without the server: it may import
  // only itself, the contract (src/protocol) and the pure machines (src/core), plus zod.
  // protocol/ and core/ import only each other and zod. Type-only imports count too: a
  // type from the server would drag its declarations into the package's .d.ts.
  {
    files: ["src/client/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: layerPatterns("../", ["protocol", "core"]) }],
    },
  },
  {
    files: ["src/client/*/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: layerPatterns("../../", ["protocol", "core"]) }],
    },
  },
  {
    files: ["src/protocol/*.ts", "src/core/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: layerPatterns("../", ["protocol", "core"]) }],
    },
  },
  // What every Durable Object needs (src/durable) builds on the contract and the machines
  // only; each object's folder adds durable/ and never reaches into another object's folder,
  // http/ or the pages: an object is addressed by its binding, not imported.
  {
    files: ["src/durable/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: layerPatterns("../", ["protocol", "core"], ["cloudflare:workers"]) },
      ],
    },
  },
  {
    files: ["src/claims/*.ts", "src/coord/*.ts", "src/generations/*.ts", "src/listing/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: layerPatterns("../", ["protocol", "core", "durable"], ["cloudflare:workers"]) },
      ],
    },
  },
  {
    // tsc checks every name in these files against the real Node types (checkJs), so
    // `no-undef`, which knows no globals, would only repeat it wrongly (typescript-eslint
    // turns it off for .ts files for the same reason).
    files: ["**/*.js", "**/*.mjs"],
    rules: { "no-undef": "off" },
  },
  {
    files: ["test/**", "bench/**", "demo/**", "src/cli/**", "bin/**"],
    rules: {
      "no-console": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
    },
  },
  { files: ["eslint.config.js"], ...tseslint.configs.disableTypeChecked },
);
