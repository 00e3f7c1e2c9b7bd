import { expect, test } from 'vitest';
import { BaseError, NonRetryableError, RetryableError } from '../../src/internal/errors.ts';
import { LeadershipLostError } from '../../src/ingest/leader.ts';
import { RpcRequestRejected } from '../../src/ingest/rpcPool.ts';

test('a lost leader lock is its own kind: neither a failure to retry nor a refusal to run', () => {
  const error = new LeadershipLostError('lost the ingest lock');
  expect(error).toBeInstanceOf(BaseError);
  expect(error).not.toBeInstanceOf(RetryableError);
  expect(error).not.toBeInstanceOf(NonRetryableError);
});

test('a request the node refused is retryable by the caller (re-planned or retried later), not a reason to stop ingesting', () => {
  expect(new RpcRequestRejected('polygon: eth_getLogs rejected', 'range', undefined)).toBeInstanceOf(RetryableError);
});
