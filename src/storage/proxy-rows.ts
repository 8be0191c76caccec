/**
 * A proxies row as both stores read it, mapped to a ProxyRecord once: SQLite hands JSON columns
 * back as text and booleans as 0/1, PostgreSQL as parsed values and booleans; everything else is
 * read the same way.
 */
import type { ProxyRecord } from './proxy-store.js';
import type { SessionGrants } from './store.js';

/** The columns both stores select (table alias `t`). */
export const PROXY_COLUMNS =
  't.seq, t.tenant_id, t.id, t.name, t.destination_url, t.request_transforms, t.response_transforms, t.configuration, t.application_id, t.bound_grants, ' +
  't.require_auth, t.key_hash, t.key_lookup, t.maker_application_id, t.maker_generation, t.created_by, t.created_at, t.modified_by, t.modified_at';

const json = (value: unknown): unknown => (typeof value === 'string' ? JSON.parse(value) : value);

export function proxyFromRow(row: Record<string, unknown>): ProxyRecord {
  return {
    id: row['id'] as string,
    tenantId: row['tenant_id'] as string,
    name: row['name'] as string,
    destinationUrl: row['destination_url'] as string,
    requestTransforms: json(row['request_transforms']) as unknown[],
    responseTransforms: json(row['response_transforms']) as unknown[],
    configuration: row['configuration'] == null ? null : new Uint8Array(row['configuration'] as Buffer),
    applicationId: (row['application_id'] ?? null) as string | null,
    boundGrants: row['bound_grants'] == null ? null : (json(row['bound_grants']) as SessionGrants),
    requireAuth: row['require_auth'] === true || row['require_auth'] === 1,
    keyHash: row['key_hash'] as string,
    keyLookup: row['key_lookup'] as string,
    maker: row['maker_application_id'] == null ? null : { applicationId: row['maker_application_id'] as string, credentialsGeneration: Number(row['maker_generation'] ?? 0) },
    createdBy: (row['created_by'] ?? null) as string | null,
    createdAt: Number(row['created_at']),
    modifiedBy: (row['modified_by'] ?? null) as string | null,
    modifiedAt: row['modified_at'] == null ? null : Number(row['modified_at']),
  };
}
