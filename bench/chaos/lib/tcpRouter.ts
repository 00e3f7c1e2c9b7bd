import net from 'node:net';

/**
 * A TCP router in front of one Postgres server whose target can change: what CloudNativePG's
 * `-rw` Service (or Patroni's HAProxy) is to the daemon. `route(port)` sends new connections to
 * another server and cuts the open ones (they belong to the old primary); `route(undefined)` is
 * the moment no primary exists: connections are accepted and closed at once. `down()`/`up()` do
 * the same for a link (the standby's replication connection) without forgetting the target.
 */
export interface TcpRouter {
  readonly port: number;
  /** The target port, or undefined while there is none. */
  readonly target: number | undefined;
  route(port: number | undefined): void;
  down(): void;
  up(): void;
  /** `url` with its host and port replaced by the router's. */
  urlFor(url: string): string;
  close(): Promise<void>;
}

export async function createTcpRouter(initialTarget: number | undefined): Promise<TcpRouter> {
  let target = initialTarget;
  let isDown = false;
  const open = new Set<net.Socket>();
  const cut = () => {
    for (const socket of open) socket.destroy();
    open.clear();
  };
  const server = net.createServer((client) => {
    if (target === undefined || isDown) {
      client.destroy();
      return;
    }
    const upstream = net.connect({ host: '127.0.0.1', port: target });
    open.add(client);
    open.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get target() {
      return target;
    },
    route(next) {
      target = next;
      cut();
    },
    down() {
      isDown = true;
      cut();
    },
    up() {
      isDown = false;
    },
    urlFor(url) {
      const routed = new URL(url);
      routed.hostname = '127.0.0.1';
      routed.port = String(port);
      return routed.toString();
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
