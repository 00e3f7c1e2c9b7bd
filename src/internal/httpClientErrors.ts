import http from 'node:http';
import type { Duplex } from 'node:stream';

/** Why Node gave up on a request before any route saw it, as the client reads it. */
function clientErrorOf(code: string | undefined): { status: number; error: string } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, error: 'the request was not received in time' };
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, error: 'the request headers are too large' };
  return { status: 400, error: 'the request is not valid HTTP' };
}

/**
 * The `clientError` answer of every listener (the API's, through fastify's `clientErrorHandler`,
 * and the metrics port's): a request whose headers or body did not arrive within the timeouts
 * (408), headers too large (431), bytes that are not HTTP (400). The body is `{"error": "…"}` like
 * every other error answer (fastify's default adds `message` and `statusCode`), and the connection
 * is closed. The only place that reads the codes of Node's HTTP parser and request timeouts.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // As Node's own handler: an answer already under way on this socket must not be corrupted.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const { status, error: text } = clientErrorOf(error.code);
    const body = JSON.stringify({ error: text });
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
