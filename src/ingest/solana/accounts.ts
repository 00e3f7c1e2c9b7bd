import { address, getAddressEncoder, getBase58Decoder, getBase64Encoder, getProgramDerivedAddress } from '@solana/kit';
import type { Sql } from '../../store/index.ts';
import type { SolanaRpcPool } from './rpc.ts';

/** The Associated Token Account program: one canonical token account per (owner, mint). */
export const ASSOCIATED_TOKEN_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';

/** A token account the ingester watches. */
export interface WatchedTokenAccount {
  address: string;
  owner: string;
  mint: string;
  tokenProgram: string;
  associated: boolean;
  cursorSignature: string | null;
  cursorSlot: bigint | null;
  floorSlot: bigint;
}

/** A watched mint and the token program that owns its accounts (chains/solana.json). */
export interface WatchedMint {
  mint: string;
  tokenProgram: string;
}

const addressBytes = getAddressEncoder();

/** The associated token account of (owner, mint): seeds [owner, token program, mint]. */
export async function associatedTokenAddress(owner: string, mint: WatchedMint): Promise<string> {
  const [pda] = await getProgramDerivedAddress({
    programAddress: address(ASSOCIATED_TOKEN_PROGRAM),
    seeds: [addressBytes.encode(address(owner)), addressBytes.encode(address(mint.tokenProgram)), addressBytes.encode(address(mint.mint))],
  });
  return pda;
}

/** Receiving wallets to watch: every `wallets` row on solana, any merchant. */
export async function loadWatchedOwners(sql: Sql): Promise<string[]> {
  const { rows } = await sql.query<{ address: string }>("SELECT DISTINCT address FROM wallets WHERE chain = 'solana' ORDER BY address");
  return rows.map((row) => row.address);
}

/** Every watched token account with its cursor, as stored in solana_token_accounts. */
export async function loadTokenAccounts(sql: Sql): Promise<WatchedTokenAccount[]> {
  const { rows } = await sql.query<{
    address: string;
    owner: string;
    mint: string;
    token_program: string;
    associated: boolean;
    cursor_signature: string | null;
    cursor_slot: bigint | null;
    floor_slot: bigint;
  }>('SELECT address, owner, mint, token_program, associated, cursor_signature, cursor_slot, floor_slot FROM solana_token_accounts ORDER BY address');
  return rows.map((row) => ({
    address: row.address,
    owner: row.owner,
    mint: row.mint,
    tokenProgram: row.token_program,
    associated: row.associated,
    cursorSignature: row.cursor_signature,
    cursorSlot: row.cursor_slot,
    floorSlot: row.floor_slot,
  }));
}

type DiscoveredTokenAccount = Omit<WatchedTokenAccount, 'cursorSignature' | 'cursorSlot' | 'floorSlot'>;

/**
 * The associated token accounts of `owner` for the watched mints: derived, no RPC, so they are
 * watched even before they exist (a payer usually creates the account in the paying transaction)
 * and whatever state the RPC is in.
 */
export async function associatedTokenAccounts(owner: string, mints: WatchedMint[]): Promise<DiscoveredTokenAccount[]> {
  return Promise.all(
    mints.map(async (mint) => ({
      address: await associatedTokenAddress(owner, mint),
      owner,
      mint: mint.mint,
      tokenProgram: mint.tokenProgram,
      associated: true,
    })),
  );
}

/** The other token accounts `owner` holds for the watched mints (getTokenAccountsByOwner), associated ones left out. */
export async function ownedTokenAccounts(rpc: SolanaRpcPool, owner: string, mints: WatchedMint[]): Promise<DiscoveredTokenAccount[]> {
  const found = new Map<string, DiscoveredTokenAccount>();
  const associated = new Set((await associatedTokenAccounts(owner, mints)).map((account) => account.address));
  for (const mint of mints) {
    const { value } = await rpc.call('getTokenAccountsByOwner', (client) =>
      client.getTokenAccountsByOwner(address(owner), { mint: address(mint.mint) }, { encoding: 'base64', commitment: 'confirmed' }),
    );
    for (const { pubkey, account } of value) {
      const data = new Uint8Array(getBase64Encoder().encode(account.data[0]));
      // SPL token account layout: mint (32 bytes), owner (32 bytes), amount (u64), ...
      if (data.length < 72) continue;
      const accountMint = getBase58Decoder().decode(data.subarray(0, 32));
      const accountOwner = getBase58Decoder().decode(data.subarray(32, 64));
      if (accountMint !== mint.mint || accountOwner !== owner || associated.has(pubkey) || found.has(pubkey)) continue;
      found.set(pubkey, { address: pubkey, owner, mint: mint.mint, tokenProgram: account.owner, associated: false });
    }
  }
  return [...found.values()];
}

/** Both of the above: every token account of `owner` for the watched mints. */
export async function discoverTokenAccounts(rpc: SolanaRpcPool, owner: string, mints: WatchedMint[]): Promise<DiscoveredTokenAccount[]> {
  return [...(await associatedTokenAccounts(owner, mints)), ...(await ownedTokenAccounts(rpc, owner, mints))];
}

/** Adds token accounts not watched yet; history before `floorSlot` is not read. Returns how many were new. */
export async function saveTokenAccounts(sql: Sql, accounts: DiscoveredTokenAccount[], floorSlot: bigint): Promise<number> {
  if (accounts.length === 0) return 0;
  const { rowCount } = await sql.query(
    `INSERT INTO solana_token_accounts (address, owner, mint, token_program, associated, floor_slot)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[], array_fill($6::bigint, ARRAY[cardinality($1::text[])]))
     ON CONFLICT (address) DO NOTHING`,
    [
      accounts.map((a) => a.address),
      accounts.map((a) => a.owner),
      accounts.map((a) => a.mint),
      accounts.map((a) => a.tokenProgram),
      accounts.map((a) => a.associated),
      floorSlot,
    ],
  );
  return rowCount ?? 0;
}
