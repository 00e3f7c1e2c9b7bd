import { statusB } from '../../api/views.ts';
import { formatAmount } from '../../internal/money.ts';
import type { Session } from '../../payments/session.ts';

/**
 * The payments CSV export. Money is decimal text made by formatAmount from bigint base units
 * (never a float), with the base units beside it for exact reconciliation. Cells are safe to
 * open in a spreadsheet: a value a spreadsheet would read as a formula (starting with = + - @,
 * or a tab or carriage return, OWASP's list) is prefixed with a single quote, and every cell is
 * quoted with inner quotes doubled (RFC 4180). Metadata values come from payers' orders and
 * merchants' code, so they are exactly the cells an attacker would fill.
 */

/** The most rows one export holds; a bigger export is narrowed with the filters (the page says so). */
export const CSV_MAX_ROWS = 50_000;

const COLUMNS = [
  'id',
  'created_at',
  'status',
  'chain',
  'currency',
  'amount',
  'amount_base_units',
  'amount_due',
  'amount_received',
  'amount_pending',
  'fee',
  'decimals',
  'tx_hash',
  'confirmations',
  'required_confirmations',
  'confirmed_at',
  'payment_link_id',
  'metadata',
] as const;

/** One CSV cell: formula-looking text defused, then quoted. */
export function csvCell(value: string): string {
  const defused = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return `"${defused.replace(/"/g, '""')}"`;
}

function row(session: Session): string[] {
  const text = (units: bigint) => formatAmount(units, session.decimals);
  return [
    session.id,
    session.createdAt.toISOString(),
    statusB(session.status),
    session.chain,
    session.currency,
    text(session.amount),
    session.amount.toString(),
    text(session.amountDue),
    text(session.amountReceived),
    text(session.amountPending),
    text(session.fee),
    String(session.decimals),
    session.txHash ?? '',
    String(session.confirmations),
    String(session.requiredConfirmations),
    session.confirmedAt?.toISOString() ?? '',
    session.paymentLinkId ?? '',
    JSON.stringify(session.metadata),
  ];
}

/** The CSV text of `sessions` with its header line; CRLF line ends (RFC 4180). */
export function paymentsCsv(sessions: Session[]): string {
  const lines = [COLUMNS.map(csvCell).join(','), ...sessions.map((session) => row(session).map(csvCell).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}
