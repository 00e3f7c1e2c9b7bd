import { createApiKey, getMerchant, listApiKeys, recordAudit, revokeApiKey, SCOPES, type Scope } from '../../accounts/index.ts';
import { emit, jsonOption, operatorOf, requireString, UsageError, withStore, type Command } from '../command.ts';

/** `svc keys create`: an API key, printed once (only its hash is stored). */
export const keysCreate: Command = {
  summary: 'create an API key (printed once; only its hash is stored)',
  usage: 'svc keys create --merchant ID --mode test|live [--scopes read,write] [--style plain|sk] [--description TEXT] [--json]',
  options: {
    merchant: { type: 'string', description: 'merchant id (mer_…)' },
    mode: { type: 'string', description: 'test (sandbox) or live (production)' },
    scopes: { type: 'string', description: `comma-separated scopes (${SCOPES.join(', ')}); default all. "read" alone makes a read-only key` },
    style: { type: 'string', description: 'prefix style: plain (svc_test_/svc_live_, default) or sk (svc_sk_/svc_sk_live_)' },
    description: { type: 'string', description: 'a note to recognise the key by' },
    ...jsonOption,
  },
  async run({ values, io, json }) {
    const merchantId = requireString(values, 'merchant');
    const mode = requireString(values, 'mode');
    if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode must be test or live');
    const scopes = typeof values.scopes === 'string' ? values.scopes.split(',').map((scope) => scope.trim()) : [...SCOPES];
    const badScopes = scopes.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
    if (badScopes.length > 0 || scopes.length === 0) throw new UsageError(`--scopes must be a comma-separated list of ${SCOPES.join(', ')}`);
    const style = (values.style as string | undefined) ?? 'plain';
    if (style !== 'plain' && style !== 'sk') throw new UsageError('--style must be plain or sk');
    return withStore(io, async (store) => {
      if (!(await getMerchant(store, merchantId))) throw new UsageError(`merchant ${merchantId} does not exist`);
      const { apiKey, secret } = await store.transaction(async (sql) => {
        const created = await createApiKey(sql, {
          merchantId,
          livemode: mode === 'live',
          scopes: scopes as Scope[],
          style,
          ...(typeof values.description === 'string' ? { description: values.description } : {}),
        });
        const { apiKey } = created;
        await recordAudit(sql, {
          merchantId,
          actor: operatorOf(io),
          action: 'key.created',
          target: apiKey.id,
          livemode: apiKey.livemode,
          details: { hint: apiKey.hint, scopes: apiKey.scopes },
        });
        return created;
      });
      emit(
        io,
        json,
        { ...apiKey, secret },
        `Created ${mode} key ${apiKey.id} with scopes ${apiKey.scopes.join(', ')}\n  ${secret}\n  (shown once; store it now)`,
      );
      return 0;
    });
  },
};

/** `svc keys list`: every key (or one merchant's), with hint, scopes and last use; never a secret. */
export const keysList: Command = {
  summary: 'list API keys (never their secrets)',
  usage: 'svc keys list [--merchant ID] [--json]',
  options: { merchant: { type: 'string', description: 'only this merchant’s keys' }, ...jsonOption },
  async run({ values, io, json }) {
    return withStore(io, async (store) => {
      const keys = await listApiKeys(store, typeof values.merchant === 'string' ? { merchantId: values.merchant } : {});
      emit(
        io,
        json,
        keys,
        keys.length === 0
          ? 'No API keys'
          : keys
              .map((key) =>
                [
                  key.id,
                  key.merchantId,
                  key.livemode ? 'live' : 'test',
                  key.hint,
                  key.scopes.join(','),
                  key.revokedAt ? `revoked ${key.revokedAt.toISOString()}` : 'active',
                  `last used ${key.lastUsedAt?.toISOString() ?? 'never'}`,
                ].join('  '),
              )
              .join('\n'),
      );
      return 0;
    });
  },
};

/** `svc keys revoke KEY_ID`: the key stops authenticating at once. */
export const keysRevoke: Command = {
  summary: 'revoke an API key; requests with it get 401 from then on',
  usage: 'svc keys revoke KEY_ID [--json]',
  options: { ...jsonOption },
  async run({ positionals, io, json }) {
    const id = positionals[0];
    if (!id) throw new UsageError('give the key id (key_…) to revoke');
    return withStore(io, async (store) => {
      const key = await store.transaction(async (sql) => {
        const revoked = await revokeApiKey(sql, id);
        if (!revoked) throw new UsageError(`API key ${id} does not exist`);
        const details = { hint: revoked.hint };
        await recordAudit(sql, {
          merchantId: revoked.merchantId,
          actor: operatorOf(io),
          action: 'key.revoked',
          target: revoked.id,
          livemode: revoked.livemode,
          details,
        });
        return revoked;
      });
      emit(io, json, key, `Revoked ${key.id} (${key.hint}) at ${key.revokedAt!.toISOString()}`);
      return 0;
    });
  },
};
