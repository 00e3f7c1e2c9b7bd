import fs from 'node:fs';
import path from 'node:path';
import { expect, test } from 'vitest';

const PAGES = ['docs/clients.md', 'clients/README.md', 'clients/node/README.md', 'clients/python/README.md', 'clients/go/README.md', 'clients/rust/README.md'];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');

test("the client docs link only to files and headings that exist, and docs/clients.md links every library's quick start and changelog", () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    const text = fs.readFileSync(page, 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#');
      const resolved = file ? path.join(path.dirname(page), file) : page;
      if (!fs.existsSync(resolved)) broken.push(`${page}: ${target}`);
      else if (anchor && fs.statSync(resolved).isFile()) {
        const headings = [...fs.readFileSync(resolved, 'utf8').matchAll(/^#+ (.+)$/gm)].map((match) => anchorOf(match[1]!));
        if (!headings.includes(anchor)) broken.push(`${page}: ${target} (no such heading)`);
      }
    }
  }
  expect(broken).toEqual([]);
  const index = fs.readFileSync('docs/clients.md', 'utf8');
  for (const library of ['node', 'python', 'go', 'rust']) {
    expect(index).toContain(`../clients/${library}/README.md#quick-start`);
    expect(index).toContain(`../clients/${library}/CHANGELOG.md`);
  }
});
