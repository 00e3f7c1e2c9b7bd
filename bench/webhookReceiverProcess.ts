import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The receiver in a child process (bench/webhookReceiver.mjs): this process's CPU is then the
 * gateway's delivery alone. Arrival times stay in the child until asked for.
 */
export async function startReceiver() {
  const child = fork(fileURLToPath(new URL('./webhookReceiver.mjs', import.meta.url)), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, (message: any) => void>();
  let nextId = 0;
  child.on('message', (message: any) => {
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const ask = (message: Record<string, unknown>) =>
    new Promise<any>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      child.send({ ...message, id });
    });
  const url = await new Promise<string>((resolve, reject) => {
    child.once('message', (message: any) => resolve(message.url));
    child.once('exit', (code) => reject(new Error(`the receiver exited (${code})`)));
  });
  return {
    url,
    until: (count: number) => ask({ type: 'until', count }).then(() => undefined),
    clear: () => ask({ type: 'clear' }).then(() => undefined),
    /** Each event id's arrival (epoch ms) and the receiver's own CPU so far. */
    arrivals: async () => {
      const answer = await ask({ type: 'arrivals' });
      return { arrivals: new Map<string, number>(answer.arrivals), cpuMicros: answer.cpuMicros as NodeJS.CpuUsage };
    },
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.send({ type: 'close' });
      }),
  };
}
