import { ponder } from 'ponder:registry';
import { transfers } from 'ponder:schema';

// Stores each transfer, as svc gateway's ingester does.
ponder.on('USDC:Transfer', async ({ event, context }) => {
  await context.db.insert(transfers).values({
    id: `${event.transaction.hash}-${event.log.logIndex}`,
    from: event.args.from,
    to: event.args.to,
    amount: event.args.value,
    blockNumber: event.block.number,
    txHash: event.transaction.hash,
    logIndex: event.log.logIndex,
  });
});
