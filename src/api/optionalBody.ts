import type { FastifyRequest } from 'fastify';

/**
 * An action whose JSON body is optional (rotate a secret, redeliver an event, reject a refund):
 * spread into the route's schema. The OpenAPI document then says `requestBody.required: false`
 * (@fastify/swagger marks every body required; src/api/openapi.ts reads this mark), so the
 * document agrees with the server, which takes no body as `{}`.
 */
export const OPTIONAL_BODY = { 'x-body-optional': true } as const;

/** preValidation of those routes: no body at all is read as `{}`, which the body schema accepts. */
export async function emptyBodyAsObject(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}
