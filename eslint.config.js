// Type-aware lint of every source file, TypeScript and the JavaScript (.mjs/.js) alike: the
// JavaScript is type-checked by tsc too (tsconfig `checkJs`, JSDoc types). The rules that
// matter most here: an un-awaited promise in a Durable Object (storage call, alarm, send) is
// a correctness bug, so floating/misused promises are errors.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules", "dist", ".wrangler", "src/env.d.ts"] },
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
