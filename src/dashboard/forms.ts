import { refusalAnswer } from '../api/httpErrors.ts';
import { html, type Html } from './html.ts';

/**
 * The message a form shows for a domain refusal (a `src/internal/errors.ts` class): the same text
 * the API answers as `{"error": …}`, so the dashboard and the API never word a rule twice. Any
 * other error (a bug, the database down) is rethrown for the error page.
 */
export function refusalMessage(error: unknown): string {
  const answer = refusalAnswer(error);
  if (!answer) throw error;
  return answer.body.error;
}

/** The inline error next to a form (`role="alert"`, read out by screen readers when it appears). */
export function errorBox(message: string): Html {
  return html`<p class="form-error" role="alert">${message}</p>`;
}

/** The inline success note after an action. */
export function noticeBox(message: string): Html {
  return html`<p class="notice" role="status">${message}</p>`;
}

/**
 * Runs a form's action; a refusal becomes `{ error, status }` (the API's message and HTTP status)
 * to show with {@link errorBox} beside the form (re-rendered with the person's input), anything
 * else propagates.
 */
export async function tryForm<T>(action: () => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string; status: number }> {
  try {
    return { ok: true, value: await action() };
  } catch (error) {
    const answer = refusalAnswer(error);
    if (!answer) throw error;
    return { ok: false, error: answer.body.error, status: answer.status };
  }
}

/** A trimmed string field of a urlencoded form ('' when absent). */
export function field(body: Record<string, string | undefined> | undefined, name: string): string {
  const value = body?.[name];
  return typeof value === 'string' ? value.trim() : '';
}
