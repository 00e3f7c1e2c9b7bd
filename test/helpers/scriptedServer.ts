import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the scripted server saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** An answer: status, headers and a JSON body; `reset` drops the connection, `hang` never answers. */
export type Script = { status: number; headers?: Record<string, string>; json?: unknown } | 'reset' | 'hang';

/**
 * A real HTTP server on loopback that answers each request as `script` says (by request index),
 * for the client tests that need answers a healthy gateway does not give on demand: 503s, 429s,
 * dropped connections. Every request is recorded in `seen`.
 */
export async function startScriptedServer(script: (request: Seen, index: number) => Script) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      const answer = script(request, seen.push(request) - 1);
      if (answer === 'reset') return void req.socket.destroy();
      if (answer === 'hang') return;
      const body = answer.json === undefined ? '' : JSON.stringify(answer.json);
      res.writeHead(answer.status, { ...(body ? { 'content-type': 'application/json; charset=utf-8' } : {}), ...answer.headers }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/v1`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
