import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { stringify } from 'yaml';
import { useTestDatabase } from '../helpers/db.ts';
import { newSolanaKeypair } from '../helpers/svmPayments.ts';
import { skipUnlessInstalled } from '../helpers/toolchains.ts';
import { readYamlDocuments } from '../helpers/kustomize.ts';
import { ALERTS_FILE } from '../../scripts/prometheus-rule.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { ConfigError } from '../../src/internal/errors.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createX402 } from '../../src/x402/index.ts';

/**
 * The relayers' and the Solana fee payer's low-balance threshold (src/internal/gasAlert.ts): 0.05
 * SOL by default on solana (it was 0.005, a few first payments that fund a merchant's token
 * account), configurable per chain, exported next to the balance, and the `SvcX402RelayerGasLow`
 * rule compares the two (run with promtool's rule unit tests).
 */
const db = useTestDatabase('x402_gas_alert');

describe('relayer gas alert thresholds', () => {
  test('defaults (0.05 SOL on solana, 5 POL on polygon), a variable per chain, and bad values refused by name', () => {
    expect(loadConfig({}).relayerGasAlertBelow).toEqual({ polygon: '5', base: '0.005', bsc: '0.005', arbitrum: '0.005', optimism: '0.005', solana: '0.05' });
    expect(loadConfig({ SVC_SOLANA_RELAYER_GAS_ALERT_BELOW: '0.2' }).relayerGasAlertBelow?.solana).toBe('0.2');
    for (const bad of ['0', '-1', 'abc', '0.0000000001'])
      expect(() => loadConfig({ SVC_SOLANA_RELAYER_GAS_ALERT_BELOW: bad }), bad).toThrow(/SVC_SOLANA_RELAYER_GAS_ALERT_BELOW/);
    expect(() => loadConfig({ SVC_BASE_RELAYER_GAS_ALERT_BELOW: 'x' })).toThrow(ConfigError);
  });

  test('the daemon exports the threshold of each chain it has a relayer key or fee payer for', async () => {
    const logger = createLogger({ level: 'silent' });
    const exported = async (env: Record<string, string>) => {
      const metrics = createMetricsRegistry({ defaultMetrics: false });
      // The RPC is not called while the stage is built.
      createX402({ store: db.store, logger, metrics, config: loadConfig({ SVC_SOLANA_RPC_URL: 'http://127.0.0.1:9', ...env }) });
      return metrics.metrics();
    };
    const key = newSolanaKeypair().base58;
    expect(await exported({ SVC_SOLANA_RELAYER_KEY: key })).toContain('svc_x402_relayer_gas_alert_threshold{chain="solana"} 0.05');
    expect(await exported({ SVC_SOLANA_RELAYER_KEY: key, SVC_SOLANA_RELAYER_GAS_ALERT_BELOW: '0.25' })).toContain(
      'svc_x402_relayer_gas_alert_threshold{chain="solana"} 0.25',
    );
    expect(await exported({})).not.toContain('svc_x402_relayer_gas_alert_threshold{chain="solana"}');
  });

  test('SvcX402RelayerGasLow fires below the exported threshold of the chain, whatever the number of processes exporting it', (context) => {
    if (spawnSync('promtool', ['--version']).error) {
      skipUnlessInstalled(context, 'promtool is not installed (apt-get install prometheus; .ci/run installs it)');
      return;
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-gas-alert-'));
    const groups = readYamlDocuments(ALERTS_FILE)[0].groups.filter((group: { name: string }) => group.name === 'svc-x402');
    fs.writeFileSync(path.join(dir, 'rules.yml'), stringify({ groups }));
    const fee = 'FeePayer1111111111111111111111111111111111';
    const series = (name: string, labels: string, values: string) => ({ series: `${name}{${labels}}`, values });
    fs.writeFileSync(
      path.join(dir, 'test.yml'),
      stringify({
        rule_files: ['rules.yml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: [
              // The fee payer at 0.03 SOL: below 0.05 (the old 0.005 would not fire); two api processes export the threshold.
              series('svc_x402_relayer_gas_balance', `chain="solana",address="${fee}",instance="api-1"`, '0.03x10'),
              series('svc_x402_relayer_gas_alert_threshold', 'chain="solana",instance="api-1"', '0.05x10'),
              series('svc_x402_relayer_gas_alert_threshold', 'chain="solana",instance="api-2"', '0.05x10'),
              // Polygon's relayer with 6 POL against 5: fine.
              series('svc_x402_relayer_gas_balance', 'chain="polygon",address="0xabc",instance="api-1"', '6x10'),
              series('svc_x402_relayer_gas_alert_threshold', 'chain="polygon",instance="api-1"', '5x10'),
            ],
            alert_rule_test: [
              {
                eval_time: '6m',
                alertname: 'SvcX402RelayerGasLow',
                exp_alerts: [
                  {
                    exp_labels: { severity: 'warning', chain: 'solana', address: fee, instance: 'api-1' },
                    exp_annotations: {
                      summary: `x402 relayer ${fee} on solana has 0.03 left for gas`,
                      runbook_url: 'docs/runbooks.md#svcx402relayergaslow',
                    },
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    const output = execFileSync('promtool', ['test', 'rules', path.join(dir, 'test.yml')], { encoding: 'utf8' });
    expect(output).toContain('SUCCESS');
  });
});
