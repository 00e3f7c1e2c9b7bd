import { expect, test } from 'vitest';
import { readMigrations } from '../../src/store/migrate.ts';

/**
 * Every migration file, pinned by the checksum migrate() records for it (sha256 of its text). A
 * database that applied a migration refuses to start when the file's checksum changes, so a
 * landed migration is never edited: a correction is a new file, pinned here when it lands.
 */
const PINNED: Record<string, string> = {
  '001_accounts.sql': 'd25d6aa0abfaaf4a531fd95f3b6adfa9d84f23bf1c467f21e1de5f312eca9876',
  '002_payments_core.sql': '72716412e25bf09a29d8185c48412f096288c185b82387f01bec0f0cd4e1c300',
  '003_api.sql': 'ab71b3b09468a69c98c4200213c46e47e0d20eb19f0c77c17d074fb4142d953a',
  '004_evm_ingest.sql': 'f91b8eec05e1bdd2f9e92b1640e79a2218bf382726cac769969cfd3108b67c9f',
  '005_engine.sql': '672067c367428dc721c922ee95d6379fe758d68295c331cfaa374e9158f37030',
  '006_webhook_delivery.sql': 'cfd2b26637d660ce66a02b2ac5bfd1c918de672ed211cc96704ffdebf0749a75',
  '007_solana_ingest.sql': '23e1238ca765412f6a4676f63b012d8866c3fe5fd83256df34caf1bf540a8a68',
  '009_sandbox.sql': '19e34592e558d12a79d0e809fb65c2837657dd878d05366c10011e7f5a982651',
  '010_payment_link_open_sessions.sql': '1287a762d896f9e14cca33b0c64cd4f8f837454d71555712a340ad77d71d21b8',
  '011_idempotency_per_account.sql': '76bf1660825fea150089c12cd3cc98246a9f66e72e60f5f871b740d46a908d2a',
  '012_idempotency_keep_finished_answer.sql': '882ca19bbfc99bd5d6314da483bd24119839b46e5c3fce4b57cb9a7e6a4a1219',
  '013_wallet_defaults.sql': '543a064d5a9d07dfa019a7f17be2b628dd5a36768e31b6fc45a85182d5be3632',
  '014_webhook_secrets_per_mode.sql': '76be135ebfc9bfe0a51f0d1f1cb92addf1d4262455605a0dffc169be61912289',
  '015_confirmed_money.sql': '5fec6b87cf37b2b58f3c46691f06c78b27ad7e30da86196162b06afc98d5b166',
  '016_api_key_change_notify.sql': '2a88c564b95d126f657313370bd858be97390fec58db1d78d1e74d59ff978f31',
  '017_dashboard.sql': 'ef91a0a313986b778bdc24c22c63dfecf11f70a0262401e26474362e0ea6ee31',
  '018_x402.sql': '78f9d368ed8840f27ea75bd4419be2852e20d1c16e1535096d800d8275bc5cab',
  '019_transaction_claims.sql': 'a39f00b367d7f3781cddbfdae6a7c893dc4cc6a444cbfbff88bd49bd8226ffaf',
  '020_delivery_claim_indexes.sql': '9757972c6fe2a8a30885494398b75977d431fb408f2e4abf22beb0f6ee739065',
  '021_flat_at_scale.sql': '86c99d3370c3316362d032d03cc8497db76e708786b626bde096fc427ef0aaa0',
  '022_payment_search.sql': 'b04daa5399edbefb0d14045b436f92d502f7fb4678bd7a5d96e4d7a1522fe722',
  '023_webhook_attempt_signatures.sql': 'd4de54c3597a5d8f7c5f1f2d055dc50d50cb7ba5b21d057bbd2280e6c450d906',
  '024_refunds_tx_hash.sql': '6ad6042ea9bd02e57256bfd89fcb6f94c9d8aa5b1ea642d813fd3898ccbd9538',
  '026_transfers_undecided.sql': 'af3eab8650ad781b20d09b595a08157e93b0c51324452515400c4975008981dd',
  '027_transfers_cheaper_inserts.sql': 'c0495eb5f8c48f0517d0bf6719b586b6a7971f74fbcde339dcd109bce7b043d6',
  '030_dashboard_emails_per_merchant.sql': '930ebb3df8f2f60342e377aac68c9154ccf7115262b6b0bab07cfab683d3348c',
  '034_deposit_addresses.sql': '33416c60645abcbcc21e076557ed5608ea009858b8a811e5ca4a2e5947f94e55',
  '036_deposit_sweeps.sql': '3a08497ce26264b8145ba600ca38c5acfd3aa11d7059664aca6ce9399f52f76a',
  '042_deposit_sweeper.sql': '1a159c22b6b85e4621cce2638d93b9c95fcebb0762cdf32026b90067c9ba8e18',
  '032_audit_api_keys.sql': '6bc25d9d0e39362e5dc03f78765fee87653adf525d2325d3ae41602105f99a85',
  '033_wallet_sole_verified.sql': 'd53ac9cef99104e547ae49601e1af6304b7a50e5ff11d220ee0ad8f45918f4f3',
  '040_merchant_brand.sql': '926b99b08a994410fdef003f788c77349aeca616b05c681644105da00d91bef0',
  '041_purchase_details.sql': 'bfd831aafe38e37ac6ea93233adc83479495461d21b501017d484d8471c43a10',
  '044_fiat_prices.sql': '1ff339f417051ddcbb95062730316059268020dfe87f69093e7c98a64a8b25ef',
  '047_x402_permit2.sql': 'ec61702f11320c3ad11160cb425d772d3c08ebec96f6252f885cd0c2c138875b',
  '049_link_visits_index.sql': 'c08e76fcd0718a5940f6a54799e7b52de58f880df7b27bd0b69a8bf44449a049',
  '054_x402_svm_method.sql': '1271d8c831cbc70096baf5acbcd003c2b951860f1c1816b5f5a03b3769694971',
  '043_payment_options.sql': '96b74d1d73918d59ac886c76fac91cc79efdc2f5a36b739d6332c260d09c95bf',
  '045_choice_prices.sql': '8efe43da4dfd57d206ce185dafd27698d2714982356398f09eeb54a8bc9ddf57',
  '048_link_waiting_sessions.sql': 'e7d5ff99f84f72eeee1c243e4bf58e9d18fa19bb63a70d3d13a95b6567029511',
  '055_due_amount_pick.sql': 'a96242dd748cae213796c886f735409c3e10066f5b8d94582ac72f3617ed44c4',
  '056_metadata_index_partial.sql': '119500c1eab5572cab021968b28e8e9a1670062448913aaf340b2ad4a7a5b008',
  '057_attempt_body_from_event.sql': 'dc61d91b562de5e4a0c8d522f2bad77c4141fe0d6bd48d1b4a871b0a54d32d9a',
  '058_attempts_without_foreign_keys.sql': 'f1d3c817c915b60fdaa6c4066faee99b7556df5ba1e1c99a18a0afc308fad687',
  // As first landed (b29aaff); its correction is 012.
};

const RULE = 'landed migrations are never edited; add a new file and pin it';

test('every migration file is pinned by its checksum: a landed one never changes, a new one is added to the table', () => {
  const files = readMigrations().map((migration) => ({
    file: `${String(migration.version).padStart(3, '0')}_${migration.name}.sql`,
    checksum: migration.checksum,
  }));
  for (const { file, checksum } of files) {
    expect(PINNED[file], `${file} is not in PINNED (test/store/migrationsPinned.test.ts): ${RULE} (its checksum: ${checksum})`).toBeDefined();
    expect(checksum, `${file} changed: ${RULE}`).toBe(PINNED[file]);
  }
  const present = new Set(files.map(({ file }) => file));
  for (const file of Object.keys(PINNED)) expect(present.has(file), `${file} is pinned but missing: ${RULE}`).toBe(true);
});
