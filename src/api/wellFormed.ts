/**
 * Where a parsed JSON body first holds text that is not well-formed Unicode, or undefined.
 *
 * JSON can spell a lone UTF-16 surrogate (`"\ud800"`), which no UTF-8 text can hold: Postgres
 * refuses it in jsonb (a 500 on metadata) and the pg driver silently turns it into U+FFFD in text
 * columns (the merchant reads back something else than it sent). So it is refused where the body
 * is parsed, before any route, and the answer names the place: `body.metadata.order`,
 * `body.items[2].name`, or `body.metadata has a key that` for a key.
 *
 * The walk is iterative: a 64 KiB body can nest thousands of levels, deeper than a recursive walk
 * could go without a stack overflow (a 500). Paths are built only for the value that is reported.
 */
export function findIllFormedText(value: unknown): string | undefined {
  interface Frame {
    value: unknown;
    parent?: Frame;
    step: string;
  }
  const stack: Frame[] = [{ value, step: 'body' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const current = frame.value;
    if (typeof current === 'string') {
      if (!wellFormed(current)) return `${pathOf(frame)} contains`;
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push({ value: current[index], parent: frame, step: `[${index}]` });
      continue;
    }
    const entries = Object.entries(current);
    for (const [key] of entries) {
      if (!wellFormed(key)) return `${pathOf(frame)} has a key that contains`;
    }
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, inner] = entries[index]!;
      stack.push({ value: inner, parent: frame, step: `.${key.length > 40 ? `${key.slice(0, 40)}…` : key}` });
    }
  }
  return undefined;
}

/** The frame's place from the body down, shortened in the middle past 200 characters. */
function pathOf(frame: { step: string; parent?: { step: string; parent?: unknown } }): string {
  const steps: string[] = [];
  for (let at: typeof frame | undefined = frame; at; at = at.parent as typeof frame | undefined) steps.push(at.step);
  const path = steps.reverse().join('');
  // Cutting may split a surrogate pair of a (well-formed) key: toWellFormed keeps the message valid.
  return asWellFormed(path.length > 200 ? `${path.slice(0, 100)}…${path.slice(-100)}` : path);
}

// String.prototype.isWellFormed and toWellFormed exist in Node 20; the project's TypeScript lib predates them.
type Es2024String = { isWellFormed(): boolean; toWellFormed(): string };
const wellFormed = (text: string): boolean => (text as unknown as Es2024String).isWellFormed();
const asWellFormed = (text: string): string => (text as unknown as Es2024String).toWellFormed();

/** The 400 message for a place findIllFormedText returned. */
export function illFormedTextMessage(place: string): string {
  return `${place} a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff), which is not well-formed Unicode`;
}
