import type { FastifyInstance } from 'fastify';
import { queryError } from '../errors';
import { type ReadOptionsQuery, parseReadOptions, readOptionsQuerySchema } from '../http/request-options';
import type { QueryService } from '../query/query-service';
import type { QueryRequest } from '../query/query-types';
import { queryBodySchema } from '../query/query-schema';
import { principalOf, requireRead } from './auth-hook';

/** How a table's rows are found by entity key: the key column and, when bucketed, the bucket. */
export interface EntityLookup {
  keyColumn: string;
  /** Partition column holding `bucketOf(key)`; lookups read only that bucket's files. */
  bucket?: { column: string; bucketOf(key: string): number };
}

const TABLE_PARAM = {
  type: 'object',
  required: ['table'],
  properties: { table: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,128}$' } },
} as const;

const SECURITY = [{ bearer: [] }];

/** `/v1/tables…`: table metadata, entity lookups and JSON queries. */
export function tableRoutes(app: FastifyInstance, service: QueryService, lookups: Record<string, EntityLookup>): void {
  app.get(
    '/v1/tables',
    { schema: { tags: ['tables'], summary: 'Tables this token may read, with version, counts and freshness', security: SECURITY } },
    async (request) => {
      const principal = principalOf(request);
      const visible = service.tables().filter((t) => principal.canRead(t));
      const tables = await Promise.all(visible.map(async (t) => service.describe(await service.snapshot(t))));
      return { tables };
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
      const where: QueryRequest['where'] = [{ column: lookup.keyColumn, op: '=', value: key }];
      if (lookup.bucket) where.push({ column: lookup.bucket.column, op: '=', value: lookup.bucket.bucketOf(key) });
      const answer = await service.query(table, { where, limit: 1, asOf, waitFor });
      if (answer.rows.length === 0) {
        throw queryError('QUERY_ENTITY_NOT_FOUND', `${JSON.stringify(key)} in ${table} at version ${answer.freshness.version}`, {
          freshness: answer.freshness,
        });
      }
      return { entity: answer.rows[0], freshness: answer.freshness, stats: answer.stats };
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
