import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", "**/*.mjs", "**/*.js"] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        // node:test runs what `test` registers; awaiting it at top level would serialize nothing.
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "it", "describe", "suite"] }] },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", ignoreRestSiblings: true }],
      complexity: ["warn", 15],
      "max-depth": ["warn", 3],
    },
  },
  {
    files: ["test/**/*.ts"],
    rules: {
      // Fakes implement async interfaces with synchronous bodies.
      "@typescript-eslint/require-await": "off",
    },
  },
);
