import { html } from '../html.ts';
import { page, type DashboardAnswer, type DashboardContext } from '../routes.ts';

/**
 * A deep link to an object of the other mode (a live payment's URL opened while viewing test data,
 * or the reverse) says so and offers the switch, instead of "not found" (issue 27). Only the
 * signed-in merchant's own objects are looked up (the probe is scoped by merchant), so nothing of
 * another merchant is revealed; the answer stays a 404 (the object is not in this mode's data).
 * @returns the page to show, or undefined when the object is in the current mode or in neither
 * (the route then answers as before).
 */
export async function otherModeAnswer(
  ctx: Pick<DashboardContext, 'livemode' | 'csrfField'>,
  params: {
    /** What it is, for the sentence: "payment ses_…". */
    what: string;
    /** The page to open after the switch (a dashboard path). */
    path: string;
    /** Whether the merchant has it in the given mode. */
    exists: (livemode: boolean) => Promise<boolean>;
  },
): Promise<DashboardAnswer | undefined> {
  if (await params.exists(ctx.livemode)) return undefined;
  const other = !ctx.livemode;
  if (!(await params.exists(other))) return undefined;
  const otherName = other ? 'live' : 'test';
  return page(
    `This ${params.what.split(' ')[0]} is in ${otherName} data`,
    html`<p id="other-mode">The ${params.what} is in your ${otherName} data; you are viewing ${other ? 'test' : 'live'} data.</p>
<form method="post" action="/dashboard/mode" class="inline">
  ${ctx.csrfField()}
  <input type="hidden" name="livemode" value="${other ? 'true' : 'false'}">
  <input type="hidden" name="next" value="${params.path}">
  <button type="submit" id="switch-mode">Switch to ${otherName} data and open it</button>
  <a href="/dashboard">Stay in ${other ? 'test' : 'live'} data</a>
</form>`,
    { status: 404 },
  );
}
