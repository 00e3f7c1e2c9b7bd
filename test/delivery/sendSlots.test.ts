import { describe, expect, test } from 'vitest';
import { createSendSlots } from '../../src/delivery/sendSlots.ts';

/** A request the test answers by hand. */
function pending() {
  let answer!: () => void;
  const done = new Promise<void>((resolve) => {
    answer = resolve;
  });
  return { done, answer };
}

describe('createSendSlots', () => {
  test('at most perTarget per target and concurrency in all; a capped target lets others go first, the rest start in order', async () => {
    const slots = createSendSlots({ concurrency: 3, perTarget: 2 });
    const started: string[] = [];
    const requests = new Map<string, ReturnType<typeof pending>>();
    const send = (target: string, name: string) =>
      slots.run(target, () => {
        started.push(name);
        const request = pending();
        requests.set(name, request);
        return request.done;
      });
    const all = [send('a', 'a1'), send('a', 'a2'), send('a', 'a3'), send('b', 'b1'), send('b', 'b2'), send('c', 'c1')];
    expect(started).toEqual(['a1', 'a2', 'b1']);
    expect([slots.running('a'), slots.running('b'), slots.running(), slots.waiting()]).toEqual([2, 1, 3, 3]);

    // a1 answers: a3 was first in line and a has room again.
    requests.get('a1')!.answer();
    await Promise.resolve();
    await Promise.resolve();
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3']);
    // b1 answers: b2 next.
    requests.get('b1')!.answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'b2']);
    // a2 answers: a has nothing waiting, c1 goes.
    requests.get('a2')!.answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a1', 'a2', 'b1', 'a3', 'b2', 'c1']);
    for (const request of requests.values()) request.answer();
    await Promise.all(all);
    expect([slots.running(), slots.waiting()]).toEqual([0, 0]);
  });

  test('a failed request frees its slot too', async () => {
    const slots = createSendSlots({ concurrency: 1, perTarget: 1 });
    await expect(slots.run('a', () => Promise.reject(new Error('ECONNRESET')))).rejects.toThrow('ECONNRESET');
    expect(await slots.run('a', async () => 'next')).toBe('next');
    expect(slots.running()).toBe(0);
  });
});
