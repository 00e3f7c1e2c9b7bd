/**
 * The docs stay honest and cheap to read: every relative link in README.md and docs/ reaches a
 * file that exists (and, for `#…` links into markdown, a heading that GitHub would give that
 * anchor), and the README stays a short entry page (everything else lives in docs/ by reader).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
/** The README is the entry page: what it is, the two commands, the quick start and links. */
const README_MAX_LINES = 200;

/** README.md and every markdown file under docs/, as paths relative to the repository root. */
function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.md')) found.push(relative);
    }
  };
  walk('docs');
  return found;
}

/** Markdown without fenced code blocks and inline code spans, where `[x](y)` is not a link. */
function proseOf(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/(`+)[^`\n]*?\1/g, '');
}

/**
 * GitHub's anchor for a heading (github-slugger): the heading's text, lower-cased, without
 * punctuation and symbols (letters, marks, digits, `_`, `-` and spaces stay), spaces as `-`.
 */
function githubSlug(headingText: string): string {
  const text = headingText
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image in a heading keeps its text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a markdown file offers: its headings' slugs (repeats get -1, -2…) and `<a id>`s. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const match of withoutCode.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = githubSlug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const match of withoutCode.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  return anchors;
}

/** The link targets of a markdown file: inline links and images, and reference definitions. */
function linkTargets(markdown: string): string[] {
  const prose = proseOf(markdown);
  const targets: string[] = [];
  for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(match[1]!);
  for (const match of prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) targets.push(match[1]!);
  return targets;
}

/** A target outside the repository (a URL with a scheme, or a protocol-relative one). */
function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');
}

/** What is wrong with one relative link of `file`, or undefined when it resolves. */
function brokenReason(file: string, target: string): string | undefined {
  const [rawPath, rawAnchor] = target.split('#', 2) as [string, string | undefined];
  const linkedPath = decodeURIComponent(rawPath);
  const resolved = linkedPath === '' ? path.join(ROOT, file) : path.resolve(ROOT, path.dirname(file), linkedPath);
  if (!resolved.startsWith(ROOT)) return 'points outside the repository';
  if (!fs.existsSync(resolved)) return 'no such file';
  if (rawAnchor === undefined || !resolved.endsWith('.md')) return undefined;
  const anchor = decodeURIComponent(rawAnchor);
  return anchorsOf(fs.readFileSync(resolved, 'utf8')).has(anchor) ? undefined : `no heading with anchor #${anchor}`;
}

describe('docs', () => {
  it('every relative link in README.md and docs/ reaches an existing file and heading', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of markdownFiles()) {
      for (const target of linkTargets(fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (isExternal(target)) continue;
        checked += 1;
        const reason = brokenReason(file, target);
        if (reason) broken.push(`${file}: (${target}) ${reason}`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(0);
  });

  it('README.md stays under 200 lines, with the rest in docs/', () => {
    const lines = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines).toBeLessThan(README_MAX_LINES);
  });

  it('githubSlug() gives the anchors GitHub gives headings', () => {
    expect(githubSlug('Transitions (src/engine/stateMachine.ts is the one table; anything else is refused)')).toBe(
      'transitions-srcenginestatemachinets-is-the-one-table-anything-else-is-refused',
    );
    expect(githubSlug('Envelope (spec §6.2)')).toBe('envelope-spec-62');
    expect(githubSlug('Docker Compose: one host')).toBe('docker-compose-one-host');
    expect(githubSlug('`svc` and [the CLI](cli.md)')).toBe('svc-and-the-cli');
    expect(githubSlug('SvcIngestDeepReorg')).toBe('svcingestdeepreorg');
  });

  it('a link check finds a missing file and a missing anchor', () => {
    expect(brokenReason('docs/README.md', 'no-such-page.md')).toBe('no such file');
    expect(brokenReason('README.md', 'docs/security.md#no-such-heading')).toBe('no heading with anchor #no-such-heading');
    expect(brokenReason('README.md', 'docs/security.md#migrations-are-never-edited')).toBeUndefined();
  });
});
