import { createTransport, type ApiRequest, type ClientOptions, type RequestOptions } from './http.ts';
import { createResources, type Resources } from './generated/resources.ts';

/** A client: one object per resource (`client.payments.list()`), plus `request` for anything else. */
export type GatewayClient = Resources & {
  /** A raw call under the base URL with the client's authentication, retries and errors. */
  request<T = unknown>(request: ApiRequest, options?: RequestOptions): Promise<T>;
};

/**
 * Creates a client of the gateway's merchant API.
 *
 * ```ts
 * const gateway = createGatewayClient({ apiKey: process.env.SVC_API_KEY! });
 * const payment = await gateway.payments.create({ amount: '25', currency: 'USDC', chain: 'base' });
 * for await (const settled of gateway.payments.list({ status: 'settled' })) console.log(settled.id);
 * ```
 */
export function createGatewayClient(options: ClientOptions): GatewayClient {
  const transport = createTransport(options);
  return { ...createResources(transport), request: (request, call) => transport.request(request, call) };
}
