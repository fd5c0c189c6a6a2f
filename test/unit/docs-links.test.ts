// The README and the pages under docs/ link to each other; a page renamed or a heading reworded
// must not leave a link that leads nowhere.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { brokenLinks, githubSlug } from "../helpers/markdown-links.ts";
import { repoRoot } from "../../toolchain/tools.ts";

/** The pages under a folder of the repository, its sub-folders included (docs/development/). */
function pagesUnder(folder: string): string[] {
  return readdirSync(join(repoRoot, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? pagesUnder(`${folder}/${entry.name}`) : entry.name.endsWith(".md") ? [`${folder}/${entry.name}`] : [],
  );
}

const documentation = [...["README.md", "CONTRIBUTING.md", "CHANGELOG.md"].filter((page) => existsSync(join(repoRoot, page))), ...pagesUnder("docs")];

test("every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and the pages under docs/ points at a file and heading that exist", () => {
  assert.ok(documentation.includes("docs/development/testing.md"), "the scan reads docs/development/ too");
  const { checked, broken } = brokenLinks(repoRoot, documentation);
  assert.ok(checked > 20, `only ${checked} links found: the scan is not reading the pages`);
  assert.deepEqual(
    broken.map((link) => `${link.file}: (${link.target}): ${link.problem}`),
    [],
  );
});

test("headings anchor as GitHub anchors them", () => {
  assert.equal(githubSlug("Drift, status and ownership"), "drift-status-and-ownership");
  assert.equal(githubSlug("The API: `appstack.dev/v1alpha1`"), "the-api-appstackdevv1alpha1");
  assert.equal(githubSlug("Installing with `pulumi up`"), "installing-with-pulumi-up");
  assert.equal(githubSlug("App (`apps`, short name `asapp`)"), "app-apps-short-name-asapp");
  assert.equal(githubSlug("snake_case and  two spaces"), "snake_case-and--two-spaces");
});

test("a missing file, a missing heading and a missing heading of another page are each reported; code is not a link", () => {
  const root = mkdtempSync(join(tmpdir(), "appstack-docs-links-"));
  try {
    writeFileSync(
      join(root, "a.md"),
      [
        "# A page",
        "## Same name",
        "## Same name",
        "[fine](b.md) [fine](b.md#a-heading-of-b) [fine](#same-name-1) [fine](https://example.com/x.md)",
        "[gone](missing.md) [no such heading](#nowhere) [no such heading there](b.md#nowhere-either)",
        "`[in code](not-a-link.md)`",
        "```sh",
        "[in a code block](not-a-link-either.md)",
        "```",
        "[wrapped",
        "text](missing-too.md)",
      ].join("\n"),
    );
    writeFileSync(join(root, "b.md"), "# A heading of B\n");
    const { broken } = brokenLinks(root, ["a.md"]);
    assert.deepEqual(
      broken.map((link) => `${link.target}: ${link.problem}`),
      [
        "missing.md: no file missing.md",
        "#nowhere: no heading #nowhere in a.md",
        "b.md#nowhere-either: no heading #nowhere-either in b.md",
        "missing-too.md: no file missing-too.md",
      ],
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
