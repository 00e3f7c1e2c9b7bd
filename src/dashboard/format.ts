import { html, type Html } from './html.ts';

/** A time as `2026-11-24 00:18 UTC` inside `<time>` (the full ISO time in its datetime attribute). */
export function timeCell(date: Date | null | undefined, empty = 'never'): Html {
  if (!date) return html`<span class="help">${empty}</span>`;
  return html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`;
}

/** The mode of a record as a badge. */
export function modeBadge(livemode: boolean): Html {
  return livemode ? html`<span class="badge live">live</span>` : html`<span class="badge test">test</span>`;
}
