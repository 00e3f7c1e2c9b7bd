import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant } from '../helpers/engine.ts';
import { appendEvent, appendEvents } from '../../src/payments/outbox.ts';

const db = useTestDatabase('engine_outbox');

describe('appendEvents', () => {
  test('writes the events in the order given (seq follows it), stamped with the time given, bodies as appendEvent writes them', async () => {
    const merchantId = await newMerchant(db.store);
    const types = Array.from({ length: 50 }, (_, i) => (i % 3 === 0 ? 'payment.confirming' : i % 3 === 1 ? 'payment.confirmed' : 'payment.settled'));
    const { single, many, now } = await db.store.transaction(async (sql) => {
      const { rows } = await sql.query<{ now: Date }>('SELECT now() AS now');
      const single = await appendEvent(sql, { merchantId, livemode: true, type: 'payment.expired', data: { id: 'one' } });
      const many = await appendEvents(
        sql,
        types.map((type, i) => ({ merchantId, livemode: false, type, data: { i } })),
        rows[0]!.now,
      );
      return { single, many, now: rows[0]!.now };
    });
    expect(many.map((envelope) => envelope.event)).toEqual(types);
    const { rows } = await db.store.query<{ id: string; type: string; created_at: Date; payload: Record<string, unknown>; livemode: boolean }>(
      'SELECT id, type, created_at, payload, livemode FROM events WHERE merchant_id = $1 ORDER BY seq',
      [merchantId],
    );
    expect(rows.map((row) => row.id)).toEqual([single.id, ...many.map((envelope) => envelope.id)]);
    expect(rows.slice(1).map((row) => row.type)).toEqual(types);
    expect(rows.slice(1).map((row) => (row.payload.data as { i: number }).i)).toEqual(types.map((_, i) => i));
    for (const row of rows) {
      expect(row.created_at.getTime()).toBe(now.getTime());
      expect(row.payload.timestamp).toBe(now.toISOString());
    }
    expect(rows[1]!.payload).toEqual({ ...many[0], data: { i: 0 } });
    expect(rows[1]!.livemode).toBe(false);
  });

  test('nothing to write sends nothing', async () => {
    await expect(appendEvents(db.store, [], new Date())).resolves.toEqual([]);
  });
});
