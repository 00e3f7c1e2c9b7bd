import {
  createWalletChallenge,
  getMerchantSettings,
  getOpenWalletChallenge,
  listWallets,
  MAX_PAYMENT_TOLERANCE_BPS,
  removeWallet,
  setDefaultWallet,
  setMerchantPaymentSettings,
  verifyWalletChallenge,
  type Wallet,
  type WalletChallenge,
} from '../../accounts/index.ts';
import { CHAIN_NAMES, type ChainName } from '../../internal/config.ts';
import { badRequest, forbidden } from '../../internal/errors.ts';
import { errorBox, field, noticeBox, tryForm } from '../forms.ts';
import { assetUrl } from '../assets.ts';
import { html, type Html } from '../html.ts';
import { page, redirect, type DashboardContext, type DashboardPageModule } from '../routes.ts';

/**
 * Settings: the merchant's receiving wallets per chain (list, add by signing the ownership
 * challenge with a browser wallet or by pasting a signature, make default, remove) and the
 * payment settings (tolerance, bridged tokens, default attribution). Wallet actions call the domain functions of the
 * API's /wallets routes under the same rule as a live API key: owners only (`wallets.manage`),
 * the password entered in the last 10 minutes, and only while viewing live data (a wallet decides
 * where live money goes, as the API refuses a test key). Audited: wallet added, made default,
 * removed; settings changed.
 */

const WALLET_MODE_RULE =
  'receiving wallets are managed in live mode (switch to live data): they decide where live payments go, so, as with the API, test mode may list them but not change them';

const NOTICES: Record<string, string> = {
  added: 'Wallet added and verified.',
  default: 'Default wallet changed.',
  removed: 'Wallet removed.',
  payment: 'Payment settings saved.',
};

function walletManagementAllowed(ctx: DashboardContext): boolean {
  return ctx.livemode && ctx.can('wallets.manage');
}

/** The API's live-key rule, for a dashboard session: live mode only. */
function requireLiveMode(ctx: DashboardContext): void {
  if (!ctx.livemode) throw forbidden(WALLET_MODE_RULE);
}

function chainOf(text: string): ChainName {
  const chain = CHAIN_NAMES.find((name) => name === text);
  if (!chain) throw badRequest(`chain must be one of ${CHAIN_NAMES.join(', ')}`);
  return chain;
}

function walletRows(ctx: DashboardContext, wallets: Wallet[]): Html {
  if (wallets.length === 0)
    return html`<p class="placeholder">No receiving wallets yet. Live payments need one per chain (or a <code>merchantWallet</code> in each request).</p>`;
  const manage = walletManagementAllowed(ctx);
  const rows = wallets.map(
    (wallet) => html`<tr>
  <td data-label="Chain">${wallet.chain}</td>
  <td data-label="Address"><code>${wallet.address}</code></td>
  <td data-label="Ownership"><span>${wallet.verified ? html`<span class="badge live">Verified</span> <span class="help">${wallet.verificationMethod ?? ''}</span>` : html`<span class="badge off">Not verified</span>`}</span></td>
  <td data-label="Default">${wallet.isDefault ? html`<span class="badge default">Default</span>` : '—'}</td>
  <td class="actions">${
    manage
      ? html`${
          !wallet.isDefault && wallet.verified
            ? html`<form method="post" action="/dashboard/settings/wallets/${wallet.id}/default" class="inline">${ctx.csrfField()}<button type="submit" class="secondary">Make default<span class="sr-only"> for ${wallet.chain}: ${wallet.address}</span></button></form>`
            : ''
        }<form method="post" action="/dashboard/settings/wallets/${wallet.id}/remove" class="inline" data-confirm="Remove ${wallet.address} from your receiving wallets?">${ctx.csrfField()}<button type="submit" class="danger">Remove<span class="sr-only"> ${wallet.chain}: ${wallet.address}</span></button></form>`
      : ''
  }</td>
</tr>`,
  );
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Scrollable table"><table class="stacked">
<caption class="sr-only">Receiving wallets</caption>
<thead><tr><th scope="col">Chain</th><th scope="col">Address</th><th scope="col">Ownership</th><th scope="col">Default</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

function chainOptions(selected: string): Html[] {
  return CHAIN_NAMES.map((chain) => html`<option value="${chain}"${chain === selected ? html` selected` : ''}>${chain}</option>`);
}

/** Step 1: chain and address; the browser wallet can fill the address. */
function addWalletForm(ctx: DashboardContext, input: { chain?: string; address?: string }): Html {
  if (!ctx.can('wallets.manage')) return html`<p class="help">Only owners add receiving wallets.</p>`;
  if (!ctx.livemode)
    return html`<p class="help">Switch to live data to add, verify, remove or choose the default wallet (${WALLET_MODE_RULE.split(': ')[0]}).</p>`;
  return html`<form method="post" action="/dashboard/settings/wallets/challenge" class="stack" id="wallet-start">
  ${ctx.csrfField()}
  <label for="wallet-chain">Chain</label>
  <select id="wallet-chain" name="chain">${chainOptions(input.chain ?? 'polygon')}</select>
  <label for="wallet-address">Address</label>
  <input id="wallet-address" name="address" required autocomplete="off" spellcheck="false" value="${input.address ?? ''}">
  <div class="inline">
    <button type="button" class="secondary" data-wallet-connect>Use my browser wallet's address</button>
    <button type="submit">Next: prove it is yours</button>
  </div>
  <p class="help" data-wallet-status role="status"></p>
</form>`;
}

/** Step 2: the challenge to sign, with the browser wallet or by pasting a signature. */
function signForm(ctx: DashboardContext, challenge: Pick<WalletChallenge, 'id' | 'chain' | 'address' | 'message'>, error?: string): Html {
  const how =
    challenge.chain === 'solana'
      ? 'Sign it with your Solana wallet (signMessage; base58 or base64 signature)'
      : 'Sign it with your wallet as a personal message (EIP-191 personal_sign)';
  return html`<section class="panel" aria-labelledby="sign-heading">
<h2 id="sign-heading">Prove that ${challenge.address} is yours</h2>
${error ? errorBox(error) : ''}
<p>${how}. The message is single use and expires in 10 minutes.</p>
<pre id="challenge-message" class="secret">${challenge.message}</pre>
<form method="post" action="/dashboard/settings/wallets" class="stack" id="wallet-sign" data-chain="${challenge.chain}" data-address="${challenge.address}">
  ${ctx.csrfField()}
  <input type="hidden" name="challengeId" value="${challenge.id}">
  <button type="button" data-wallet-sign>Sign with my browser wallet</button>
  <p class="help" data-wallet-status role="status"></p>
  <label for="wallet-signature">Or paste the signature</label>
  <textarea id="wallet-signature" name="signature" rows="3" required spellcheck="false"></textarea>
  <label class="check"><input type="checkbox" name="default" value="true"> Make it the default wallet for ${challenge.chain}</label>
  <button type="submit">Add the wallet</button>
</form>
</section>`;
}

async function paymentSettingsForm(ctx: DashboardContext): Promise<Html> {
  const settings = (await getMerchantSettings(ctx.store, ctx.merchant.id))!;
  const editable = ctx.can('settings.manage');
  return html`<form method="post" action="/dashboard/settings/payment" class="stack">
  ${ctx.csrfField()}
  <label for="tolerance">Payment tolerance (basis points of the due amount)</label>
  <input id="tolerance" name="paymentToleranceBps" type="number" min="0" max="${MAX_PAYMENT_TOLERANCE_BPS}" step="1" inputmode="numeric" value="${settings.paymentToleranceBps}"${editable ? '' : html` disabled`} aria-describedby="tolerance-help">
  <p class="help" id="tolerance-help">A payment that arrives this much short still confirms: 50 = 0.5%. 0 (the default) asks for the full amount; at most ${MAX_PAYMENT_TOLERANCE_BPS} (10%).</p>
  <label class="check"><input type="checkbox" name="acceptBridgedTokens" value="true"${settings.acceptBridgedTokens ? html` checked` : ''}${editable ? '' : html` disabled`}> Accept bridged tokens (USDC.e and others) where a chain lists them</label>
  <label for="attribution">How payments are told apart (new payments and links that do not say)</label>
  <select id="attribution" name="defaultAttribution"${editable ? '' : html` disabled`} aria-describedby="attribution-help">
    <option value="amount"${settings.defaultAttribution === 'amount' ? html` selected` : ''}>By amount: one shared wallet, a unique amount per payment</option>
    <option value="address"${settings.defaultAttribution === 'address' ? html` selected` : ''}>By address: a deposit address per payment, the plain amount</option>
  </select>
  <p class="help" id="attribution-help">By address (EVM chains): each payment gets its own address that only ever forwards to your wallet, so customers may send any amount from any wallet or exchange. Solana payments always use Solana Pay references.</p>
  ${editable ? html`<button type="submit">Save payment settings</button>` : html`<p class="help">Only owners change these.</p>`}
</form>`;
}

async function settingsPage(
  ctx: DashboardContext,
  parts: { notice?: string; walletError?: string; paymentError?: string; addForm?: Html } = {},
): Promise<Html> {
  const wallets = await listWallets(ctx.store, { merchantId: ctx.merchant.id });
  return html`${parts.notice ? noticeBox(parts.notice) : ''}
<p><a href="/dashboard/settings/brand" id="brand-settings-link">Brand: name, logo, colour and support contacts shown to customers</a></p>
<section aria-labelledby="wallets-heading">
<h2 id="wallets-heading">Receiving wallets</h2>
<p class="help">Payments go straight to these wallets; the gateway never holds funds. The default wallet of a chain is paid by live payments and links that name none.</p>
${parts.walletError ? errorBox(parts.walletError) : ''}
${walletRows(ctx, wallets)}
<h3>Add a wallet</h3>
${parts.addForm ?? addWalletForm(ctx, {})}
</section>
<section aria-labelledby="payment-heading">
<h2 id="payment-heading">Payments</h2>
${parts.paymentError ? errorBox(parts.paymentError) : ''}
${await paymentSettingsForm(ctx)}
</section>
<script src="${assetUrl('settings.js')}" defer></script>`;
}

export const settingsPages: DashboardPageModule = (routes) => {
  routes.get('/settings', { nav: 'settings' }, async (ctx, request) =>
    page('Settings', await settingsPage(ctx, { notice: NOTICES[request.query.done ?? ''] })),
  );

  const walletRoute = { nav: 'settings', permission: 'wallets.manage', recentPassword: true } as const;

  routes.post('/settings/wallets/challenge', walletRoute, async (ctx, request) => {
    const input = { chain: field(request.body, 'chain'), address: field(request.body, 'address') };
    const result = await tryForm(async () => {
      requireLiveMode(ctx);
      return createWalletChallenge(ctx.store, { merchantId: ctx.merchant.id, chain: chainOf(input.chain), address: input.address });
    });
    if (!result.ok)
      return page('Settings', await settingsPage(ctx, { walletError: result.error, addForm: addWalletForm(ctx, input) }), { status: result.status });
    return page('Settings', await settingsPage(ctx, { addForm: signForm(ctx, result.value) }));
  });

  routes.post('/settings/wallets', walletRoute, async (ctx, request) => {
    const challengeId = field(request.body, 'challengeId');
    const result = await tryForm(async () => {
      requireLiveMode(ctx);
      await ctx.store.transaction(async (sql) => {
        const wallet = await verifyWalletChallenge(sql, {
          merchantId: ctx.merchant.id,
          challengeId,
          signature: field(request.body, 'signature'),
          makeDefault: field(request.body, 'default') === 'true',
        });
        const details = { chain: wallet.chain, address: wallet.address, method: wallet.verificationMethod };
        await ctx.audit('wallet.added', { target: wallet.id, sql, details, livemode: null });
        if (wallet.isDefault) await ctx.audit('wallet.default_set', { target: wallet.id, sql, details, livemode: null });
      });
    });
    if (result.ok) return redirect('/dashboard/settings?done=added');
    // Show the same challenge again (while it can still be used) with the refusal beside it.
    const open = challengeId ? await getOpenWalletChallenge(ctx.store, { merchantId: ctx.merchant.id, challengeId }) : undefined;
    const addForm = open ? signForm(ctx, open, result.error) : html`${errorBox(result.error)}${addWalletForm(ctx, {})}`;
    return page('Settings', await settingsPage(ctx, { addForm }), { status: result.status });
  });

  routes.post<{ id: string }>('/settings/wallets/:id/default', walletRoute, async (ctx, request) => {
    const result = await tryForm(async () => {
      requireLiveMode(ctx);
      await ctx.store.transaction(async (sql) => {
        const wallet = await setDefaultWallet(sql, { merchantId: ctx.merchant.id, walletId: request.params.id });
        await ctx.audit('wallet.default_set', { target: wallet.id, sql, details: { chain: wallet.chain, address: wallet.address }, livemode: null });
      });
    });
    if (result.ok) return redirect('/dashboard/settings?done=default');
    return page('Settings', await settingsPage(ctx, { walletError: result.error }), { status: result.status });
  });

  routes.post<{ id: string }>('/settings/wallets/:id/remove', walletRoute, async (ctx, request) => {
    const result = await tryForm(async () => {
      requireLiveMode(ctx);
      await ctx.store.transaction(async (sql) => {
        const wallet = await removeWallet(sql, { merchantId: ctx.merchant.id, walletId: request.params.id });
        await ctx.audit('wallet.removed', { target: wallet.id, sql, details: { chain: wallet.chain, address: wallet.address }, livemode: null });
      });
    });
    if (result.ok) return redirect('/dashboard/settings?done=removed');
    return page('Settings', await settingsPage(ctx, { walletError: result.error }), { status: result.status });
  });

  routes.post('/settings/payment', { nav: 'settings', permission: 'settings.manage' }, async (ctx, request) => {
    const toleranceText = field(request.body, 'paymentToleranceBps');
    const attribution = field(request.body, 'defaultAttribution');
    const settings = {
      acceptBridgedTokens: field(request.body, 'acceptBridgedTokens') === 'true',
      paymentToleranceBps: /^\d{1,6}$/.test(toleranceText) ? Number(toleranceText) : Number.NaN,
      // An older form without the field keeps the merchant's mode.
      ...(attribution === '' ? {} : { defaultAttribution: attribution }),
    };
    const result = await tryForm(() =>
      ctx.store.transaction(async (sql) => {
        await setMerchantPaymentSettings(sql, ctx.merchant.id, settings);
        await ctx.audit('merchant.settings_changed', { target: ctx.merchant.id, sql, details: settings, livemode: null });
      }),
    );
    if (result.ok) return redirect('/dashboard/settings?done=payment');
    return page('Settings', await settingsPage(ctx, { paymentError: result.error }), { status: result.status });
  });
};
