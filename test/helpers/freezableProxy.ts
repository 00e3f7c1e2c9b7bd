import net from 'node:net';

/**
 * A TCP proxy in front of a real Postgres that can be frozen: while frozen, no byte moves in
 * either direction on any connection, and new connections are accepted but not forwarded. That
 * is what a frozen database host or a network partition looks like to the daemon (the sockets
 * stay open, nothing answers), without stopping the shared test cluster.
 */
export interface FreezableProxy {
  /** `connectionString` with its host and port replaced by the proxy's. */
  connectionString: string;
  /** Stops every byte; idempotent. */
  freeze(): void;
  /** Lets bytes flow again and forwards the connections accepted meanwhile; idempotent. */
  thaw(): void;
  /** A database that is down: open connections are cut and new ones closed at once, until `up()`. */
  down(): void;
  up(): void;
  /** Connections accepted so far (while down too): how often a client tried. */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startFreezableProxy(connectionString: string): Promise<FreezableProxy> {
  const target = new URL(connectionString);
  let frozen = false;
  let isDown = false;
  let accepted = 0;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket | undefined; connect(): void }>();

  const server = net.createServer((client) => {
    accepted++;
    if (isDown) {
      client.destroy();
      return;
    }
    const pair = {
      client,
      upstream: undefined as net.Socket | undefined,
      connect() {
        const upstream = net.connect({ host: target.hostname, port: Number(target.port || 5432) });
        pair.upstream = upstream;
        client.pipe(upstream);
        upstream.pipe(client);
        upstream.on('error', () => client.destroy());
        upstream.on('close', () => client.destroy());
      },
    };
    pairs.add(pair);
    client.on('error', () => pair.upstream?.destroy());
    client.on('close', () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (frozen) client.pause();
    else pair.connect();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxied = new URL(connectionString);
  proxied.hostname = '127.0.0.1';
  proxied.port = String((server.address() as net.AddressInfo).port);

  return {
    connectionString: proxied.toString(),
    freeze() {
      if (frozen) return;
      frozen = true;
      for (const pair of pairs) {
        // unpipe first: pipe() would resume a paused source on the next drain.
        pair.client.unpipe();
        pair.upstream?.unpipe();
        pair.client.pause();
        pair.upstream?.pause();
      }
    },
    thaw() {
      // Piping twice would send every byte twice.
      if (!frozen) return;
      frozen = false;
      for (const pair of pairs) {
        if (!pair.upstream) {
          pair.connect();
        } else {
          pair.client.pipe(pair.upstream);
          pair.upstream.pipe(pair.client);
        }
        pair.client.resume();
        pair.upstream?.resume();
      }
    },
    down() {
      isDown = true;
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
    },
    up() {
      isDown = false;
    },
    get accepted() {
      return accepted;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
