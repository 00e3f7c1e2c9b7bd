import { CHAIN_NAMES, loadConfig, relayerKeyFileVariableName, relayerKeyVariableName, rpcVariableNames, VARIABLES } from '../../internal/config.ts';
import { ConfigError } from '../../internal/errors.ts';
import { DEFAULT_GAS_ALERT_BELOW, gasAlertVariableName } from '../../internal/gasAlert.ts';
import { emit, jsonOption, type Command } from '../command.ts';

/** One environment variable as `svc config` lists it. */
interface ConfigRow {
  variable: string;
  default: string | null;
  set: boolean;
  description: string;
}

/** Every variable with its documentation and whether it is set, plus any validation problems. */
function formatConfigTable(env: Record<string, string | undefined>): { rows: ConfigRow[]; text: string; ok: boolean } {
  const rows: ConfigRow[] = Object.values(VARIABLES).map((variable) => ({
    variable: variable.name,
    default: variable.default ?? null,
    set: Boolean(env[variable.name]),
    description: variable.doc,
  }));
  for (const chain of CHAIN_NAMES) {
    const names = rpcVariableNames(chain);
    rows.push(
      {
        variable: names.http,
        default: null,
        set: Boolean(env[names.http]),
        description: `${chain} HTTP JSON-RPC URLs, comma-separated for failover; unset: ${chain} runs sandbox-only`,
      },
      {
        variable: names.ws,
        default: null,
        set: Boolean(env[names.ws]),
        description: `${chain} WebSocket URLs, comma-separated; unset: the ingester polls over HTTP`,
      },
    );
    if (chain !== 'bsc') {
      // Whether it is set, never its value.
      const relayer = relayerKeyVariableName(chain);
      rows.push({
        variable: relayer,
        default: null,
        set: Boolean(env[relayer]),
        description:
          chain === 'solana'
            ? "solana x402 fee payer: a keypair holding SOL only (base58, or solana-keygen's JSON array) that co-signs payers' TransferChecked transactions and pays their fees; unset: no live x402 on solana"
            : `${chain} x402 relayer: a gas-only private key that submits payers' EIP-3009 authorizations; unset: no live x402 on ${chain}`,
      });
      const file = relayerKeyFileVariableName(chain);
      rows.push({
        variable: file,
        default: null,
        set: Boolean(env[file]),
        description: `a file holding the ${chain} relayer key instead (a mounted secret; content trimmed); not with ${relayer}`,
      });
    }
    const below = gasAlertVariableName(chain);
    rows.push({
      variable: below,
      default: DEFAULT_GAS_ALERT_BELOW[chain],
      set: Boolean(env[below]),
      description: `native coin below which the ${chain} relayer key or fee payer is reported low (svc_x402_relayer_gas_alert_threshold, alert SvcX402RelayerGasLow)`,
    });
  }
  let problems: string[] = [];
  try {
    loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems = error.problems;
  }
  const width = Math.max(...rows.map((row) => row.variable.length));
  const text = [
    ...rows.map((row) => `${row.variable.padEnd(width)}  ${row.set ? 'set  ' : 'unset'}  ${row.description}${row.default ? ` (default ${row.default})` : ''}`),
    ...(problems.length > 0 ? ['', 'Problems:', ...problems.map((problem) => `  ${problem}`)] : []),
  ].join('\n');
  return { rows, text, ok: problems.length === 0 };
}

/** `svc config`: every variable the daemon reads, whether it is set here, and what is wrong with the set. Exit 1 on a problem. */
export const config: Command = {
  summary: 'list the environment variables the daemon reads, with their current values checked',
  usage: 'svc config [--json]',
  options: { ...jsonOption },
  async run({ io, json }) {
    const table = formatConfigTable(io.env);
    emit(io, json, table.rows, table.text);
    return table.ok ? 0 : 1;
  },
};
