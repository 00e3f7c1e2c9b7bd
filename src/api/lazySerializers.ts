import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';

type BuildSerializer = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildSerializer'];

/**
 * Fastify's own response serializers (fast-json-stringify), each built on the first answer its
 * route and status send instead of when the server starts. Building all of them up front was
 * most of the API role's start-up CPU (issue 28: about as much as loading every module); a route
 * answered once pays its few milliseconds then, and one never answered never pays them. What is
 * written is byte for byte what the eager serializers write.
 */
export const buildLazySerializer: BuildSerializer = (externalSchemas, serializerOptions) => {
  const build = SerializerSelector()(externalSchemas as never, serializerOptions as never);
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      serialize ??= build(route as never) as (data: unknown) => string;
      return serialize(data);
    };
  };
};
