/**
 * Why an SVM payment is refused: @x402/svm's facilitator codes (`invalid_exact_svm_*`) where it
 * has one, and this gateway's own for the stricter rules it adds (docs/security.md, "x402 on
 * Solana").
 */
export const SVM_REASONS = {
  scheme: 'invalid_exact_svm_unsupported_scheme',
  network: 'invalid_exact_svm_network_mismatch',
  undecodable: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
  feePayerMismatch: 'invalid_exact_svm_fee_payer_mismatch',
  signers: 'invalid_exact_svm_payload_excessive_signers',
  signature: 'invalid_exact_svm_payload_signature_invalid',
  lookupTables: 'invalid_exact_svm_payload_address_lookup_tables',
  layout: 'invalid_exact_svm_payload_transaction_instructions_length',
  computeLimit: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction',
  computeLimitTooHigh: 'invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high',
  computePrice: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction',
  computePriceTooHigh: 'invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high',
  noTransfer: 'invalid_exact_svm_payload_no_transfer_instruction',
  unknownInstruction: 'invalid_exact_svm_payload_unknown_optional_instruction',
  feePayerTransferring: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
  feePayerInInstruction: 'invalid_exact_svm_payload_fee_payer_in_instruction_accounts',
  foreignAccountCreation: 'invalid_exact_svm_payload_foreign_account_creation',
  mint: 'invalid_exact_svm_payload_mint_mismatch',
  recipient: 'invalid_exact_svm_payload_recipient_mismatch',
  amount: 'invalid_exact_svm_payload_amount_mismatch',
  simulation: 'invalid_exact_svm_transaction_simulation_failed',
  transactionUsed: 'invalid_exact_svm_transaction_already_used',
  transaction: 'invalid_exact_svm_transaction_failed',
} as const;
