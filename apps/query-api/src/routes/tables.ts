import type { FastifyInstance } from 'fastify';
import { isSluiceError } from '@sluice/errors';
import { queryError } from '../errors';
import { type ReadOptionsQuery, parseReadOptions, readOptionsQuerySchema } from '../http/request-options';
import type { EntityLookup, QueryService } from '../query/query-service';
import type { QueryRequest } from '../query/query-types';
import { queryBodySchema } from '../query/query-schema';
import { principalOf, requireRead } from './auth-hook';

const TABLE_PARAM = {
  type: 'object',
  required: ['table'],
  properties: { table: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,128}$' } },
} as const;

const SECURITY = [{ bearer: [] }];

/** A route that takes no query parameters refuses any (400) rather than ignore them. */
const NO_QUERY = { type: 'object', additionalProperties: false, properties: {} } as const;

/** `/v1/tables…`: table metadata, entity lookups and JSON queries. */
export function tableRoutes(app: FastifyInstance, service: QueryService, lookups: Record<string, EntityLookup>): void {
  app.get(
    '/v1/tables',
    {
      schema: {
        tags: ['tables'],
        summary: 'Tables this token may read, with version, counts and freshness',
        security: SECURITY,
        // Read options are per table (/v1/tables/:table): here they were ignored without a word.
        querystring: NO_QUERY,
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const visible = service.tables().filter((t) => principal.canRead(t));
      const unreadable: { table: string; cause: unknown }[] = [];
      const described = await Promise.all(
        visible.map(async (t) => {
          try {
            return service.describe(await service.snapshot(t));
          } catch (err) {
            // A configured table that has no commit yet is simply not listed.
            if (isSluiceError(err, 'QUERY_TABLE_UNKNOWN')) return undefined;
            // One table this service cannot read (another writer turned on deletion vectors, a
            // corrupt log, storage refusing or not answering) is named with the code of why, not
            // allowed to fail the list of every other table (the dashboard draws from it).
            request.log.warn({ err, table: t }, 'table left out of the list');
            unreadable.push({ table: t, cause: isSluiceError(err) ? (err.details.cause ?? err.code) : 'QUERY_INTERNAL' });
            return undefined;
          }
        }),
      );
      return { tables: described.filter((d) => d !== undefined), ...(unreadable.length > 0 && { unreadable }) };
    },
  );

  app.get<{ Params: { table: string }; Querystring: ReadOptionsQuery }>(
    '/v1/tables/:table',
    {
      schema: {
        tags: ['tables'],
        summary: 'Schema, version, row and file counts and freshness of one table',
        security: SECURITY,
        params: TABLE_PARAM,
        querystring: readOptionsQuerySchema,
      },
    },
    async (request) => {
      const { table } = request.params;
      requireRead(request, table);
      const { asOf, waitFor } = parseReadOptions(request.query);
      return service.describe(await service.snapshot(table, asOf, waitFor));
    },
  );

  app.get<{ Params: { table: string; key: string }; Querystring: ReadOptionsQuery }>(
    '/v1/tables/:table/entities/:key',
    {
      schema: {
        tags: ['query'],
        summary: 'Point lookup of one entity by its key (reads only the key’s bucket)',
        security: SECURITY,
        params: {
          type: 'object',
          required: ['table', 'key'],
          properties: { ...TABLE_PARAM.properties, key: { type: 'string', minLength: 1, maxLength: 1024 } },
        },
        querystring: readOptionsQuerySchema,
      },
    },
    async (request) => {
      const { table, key } = request.params;
      requireRead(request, table);
      service.assertTable(table);
      const lookup = lookups[table];
      if (!lookup) throw queryError('QUERY_LOOKUP_UNSUPPORTED', table, { table });
      const { asOf, waitFor } = parseReadOptions(request.query);
      return service.lookup(table, lookup, key, asOf, waitFor);
    },
  );

  app.post<{ Params: { table: string }; Body: QueryRequest }>(
    '/v1/tables/:table/query',
    {
      schema: {
        tags: ['query'],
        summary: 'JSON query: filters, grouping, aggregates, time buckets, order, paging, time travel',
        security: SECURITY,
        params: TABLE_PARAM,
        // Read options go in the body here (asOf, waitFor): a query-string asOfVersion was ignored.
        querystring: NO_QUERY,
        body: queryBodySchema,
      },
    },
    async (request) => {
      const { table } = request.params;
      requireRead(request, table);
      return service.query(table, request.body);
    },
  );
}
