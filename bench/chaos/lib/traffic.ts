/**
 * What the chaos runs do to the fleet: a merchant's backend creating live sessions through the API
 * (retrying with its Idempotency-Key, as a client library does), a payer paying each one's exact
 * due amount on anvil, a miner, readers polling sessions, and a webhook receiver that records every
 * delivery by event id (and can be taken down: 503 with Retry-After).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import type { Address, Hash } from 'viem';
import { PAYER, tokenAbi, type Anvil } from '../../../test/helpers/anvil.ts';

export interface ApiAnswer {
  status: number;
  body: any;
}

const agent = new Agent({ connections: 64, headersTimeout: 15_000, bodyTimeout: 15_000 });

/** One request; a network failure is status 0. Each call comes from its own client IP (per-IP limits). */
export async function apiCall(
  base: string,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${key}`,
    'x-forwarded-for': `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
    ...extra,
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  try {
    const response = await request(`${base}${path}`, { method, headers, dispatcher: agent, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await response.body.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: response.statusCode, body: parsed };
  } catch {
    return { status: 0, body: null };
  }
}

/** Retries 0 (network), 429 and 5xx answers until `deadlineMs`; returns the last answer. */
export async function apiCallRetrying(
  base: string,
  key: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  extra: Record<string, string> = {},
  deadlineMs = 120_000,
) {
  const until = Date.now() + deadlineMs;
  let wait = 100;
  for (;;) {
    const answer = await apiCall(base, key, method, path, body, extra);
    if ((answer.status !== 0 && answer.status !== 429 && answer.status < 500) || Date.now() > until) return answer;
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(wait * 2, 2_000);
  }
}

export interface Delivery {
  id: string;
  event: string;
  sessionId: string | undefined;
  timestamp: string;
  receivedAt: number;
}

/** A webhook receiver: every delivery recorded (duplicates too); `down()` answers 503 with Retry-After: 1. */
export async function startHookReceiver() {
  const deliveries: Delivery[] = [];
  let up = true;
  let refused = 0;
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      if (!up) {
        refused++;
        res.writeHead(503, { 'retry-after': '1' }).end();
        return;
      }
      try {
        const body = JSON.parse(text);
        deliveries.push({ id: body.id, event: body.event, sessionId: body.data?.id, timestamp: body.timestamp, receivedAt: Date.now() });
      } catch {}
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    deliveries,
    down: () => {
      up = false;
    },
    up: () => {
      up = true;
    },
    get refused() {
      return refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
export type HookReceiver = Awaited<ReturnType<typeof startHookReceiver>>;

/** Sets up the bootstrap merchant for live payments into `wallet`: a live key, the wallet, no rate limits, the receiver. */
export async function liveMerchant(
  fleet: { apiUrl: string; bootstrap: { merchantId: string }; cli(...args: string[]): Promise<string> },
  wallet: Address,
  hookUrl: string,
) {
  const merchant = fleet.bootstrap.merchantId;
  const key = JSON.parse(await fleet.cli('keys', 'create', '--merchant', merchant, '--mode', 'live', '--json')).secret as string;
  await fleet.cli('wallets', 'add', '--merchant', merchant, '--wallet', `polygon:${wallet}`);
  const unlimited = '1000000';
  await fleet.cli(
    'merchants',
    'update',
    '--merchant',
    merchant,
    '--create-per-minute',
    unlimited,
    '--read-per-minute',
    unlimited,
    '--write-per-minute',
    unlimited,
  );
  const hook = await apiCallRetrying(fleet.apiUrl, key, 'POST', '/api/v1/webhooks', { url: hookUrl });
  if (hook.status !== 201 && hook.status !== 200) throw new Error(`webhook endpoint: ${hook.status} ${JSON.stringify(hook.body)}`);
  return key;
}

/** The payer: one impersonated account with a large balance, one `transfer` per payment (no gas estimation). */
export async function startPayer(anvil: Anvil, token: Address) {
  await anvil.client.impersonateAccount({ address: PAYER });
  await anvil.client.setBalance({ address: PAYER, value: 10n ** 24n });
  await anvil.waitMined(await anvil.mint(token, PAYER, 10n ** 30n));
  await anvil.client.impersonateAccount({ address: PAYER });
  return {
    send: (to: Address, amount: bigint): Promise<Hash> =>
      anvil.client.writeContract({
        account: PAYER,
        chain: anvil.client.chain,
        address: token,
        abi: tokenAbi,
        functionName: 'transfer',
        args: [to, amount],
        gas: 100_000n,
      }),
  };
}

/** Mines a block every `everyMs` until stopped (the confirmation rule needs blocks). */
export function startMiner(anvil: Anvil, everyMs: number) {
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      await anvil.mine(1).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
    },
  };
}

/** One payment as the merchant's backend and the payer know it. */
export interface PaymentRecord {
  index: number;
  sessionId?: string;
  due?: bigint;
  /** When the API acknowledged the session (201). */
  acknowledgedAt?: number;
  txHash?: Hash;
  /** Every hash a send for this payment returned, failed attempts' included (the audit's bookkeeping). */
  sentHashes?: Hash[];
  paidAt?: number;
  /** The API never acknowledged it (gave up): no money is sent for it. */
  abandoned?: boolean;
}

/**
 * Creates and pays `count` sessions, `concurrency` at a time: each session is created with an
 * Idempotency-Key (retried through failures until acknowledged), then paid its exact due amount.
 */
export async function runPayments(params: {
  apiUrl: () => string;
  key: string;
  wallet: Address;
  send: (to: Address, amount: bigint) => Promise<Hash>;
  count: number;
  concurrency: number;
  runId: string;
  records: PaymentRecord[];
  /** Pause between one worker's payments (steady traffic rather than a flood). */
  paceMs?: number;
  /** Stops taking new payments once true (the ones under way finish). */
  stop?: () => boolean;
}) {
  let next = 0;
  await Promise.all(
    Array.from({ length: params.concurrency }, async () => {
      while (next < params.count && !params.stop?.()) {
        const record: PaymentRecord = { index: next++ };
        params.records.push(record);
        const cents = 100 + Math.floor(Math.random() * 9_900);
        const created = await apiCallRetrying(
          params.apiUrl(),
          params.key,
          'POST',
          '/api/v1/sessions',
          { amount: (cents / 100).toFixed(2), currency: 'USDC', chain: 'polygon', merchantWallet: params.wallet },
          { 'idempotency-key': `${params.runId}-${record.index}` },
          300_000,
        );
        if (created.status !== 201) {
          record.abandoned = true;
          continue;
        }
        record.sessionId = created.body.id;
        record.due = BigInt(created.body.amountDueBaseUnits);
        record.acknowledgedAt = Date.now();
        for (let attempt = 0; ; attempt++) {
          try {
            record.txHash = await params.send(params.wallet, record.due!);
            record.sentHashes = [...(record.sentHashes ?? []), record.txHash];
            record.paidAt = Date.now();
            break;
          } catch (error) {
            if (attempt >= 20) throw error;
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        if (params.paceMs) await new Promise((resolve) => setTimeout(resolve, params.paceMs));
      }
    }),
  );
}

/** Readers: GET a random acknowledged session every `everyMs` per reader; returns the times of successful answers. */
export function startReaders(params: { apiUrl: () => string; key: string; records: PaymentRecord[]; readers: number; everyMs: number }) {
  const successes: number[] = [];
  const failures: number[] = [];
  let stopped = false;
  const loops = Array.from({ length: params.readers }, async () => {
    while (!stopped) {
      const known = params.records.filter((record) => record.sessionId);
      const path = known.length > 0 ? `/api/v1/sessions/${known[Math.floor(Math.random() * known.length)]!.sessionId}` : '/api/v1/sessions?limit=1';
      const answer = await apiCall(params.apiUrl(), params.key, 'GET', path);
      (answer.status === 200 ? successes : failures).push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, params.everyMs));
    }
  });
  return {
    successes,
    failures,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}
