/**
 * How a pre-configured proxy is shown (docs/proxies.md): never its key (only on create and
 * rotation), never its configuration values (the names only, each value replaced by a mask), and
 * its application only to a caller that may bind to it (as a reactor's: docs/authority.md). The
 * application's id is given twice: `application: { id }` (our reactors' shape) and `application_id`
 * (the Basis Theory SDK 4.x's Proxy reads `applicationId`), both withheld alike.
 */
import { formatIso } from '../common/time.js';
import type { ProxyRecord } from '../storage/store.js';
import type { KeyStanding } from './proxy-maker.js';

/** What a configuration value reads as: the secret is never shown, in full or in part. */
export const MASKED_VALUE = '********';

export interface ProxyView {
  id: string;
  tenant_id: string;
  name: string;
  destination_url: string;
  request_transforms: unknown[];
  response_transforms: unknown[];
  /** The first transform of each list (the Basis Theory SDK's singular fields). */
  request_transform: unknown;
  response_transform: unknown;
  configuration: Record<string, string> | null;
  /** `{ redacted: true }` to a caller that may not bind to it (one is bound, which is withheld). */
  application: { id: string } | { redacted: true } | null;
  /** The bound application's id, where `application` shows it (the Basis Theory SDK's `applicationId`). */
  application_id?: string;
  require_auth: boolean;
  /** Only in the answer of a create or a key rotation. */
  key?: string;
  /**
   * The application whose credentials the key stands on (it made, confirmed or last gave the
   * proxy a key) and whether the key still works: `ended` once that application's keys were
   * regenerated or one deleted, `maker_deleted` once it was deleted. Null: made by a tenant
   * administrator, it ends with no application's keys (docs/proxies.md, When a proxy's key ends).
   */
  key_credentials: { application_id: string; status: 'current' | 'ended' | 'maker_deleted' } | null;
  created_by: string | null;
  created_at: string;
  modified_by: string | null;
  modified_at: string | null;
}

export function proxyView(proxy: ProxyRecord, configurationNames: string[] | null, showApplication: boolean, key?: string, standing: KeyStanding = null): ProxyView {
  const shown = proxy.applicationId !== null && showApplication;
  return {
    id: proxy.id,
    tenant_id: proxy.tenantId,
    name: proxy.name,
    destination_url: proxy.destinationUrl,
    request_transforms: proxy.requestTransforms,
    response_transforms: proxy.responseTransforms,
    request_transform: proxy.requestTransforms[0] ?? null,
    response_transform: proxy.responseTransforms[0] ?? null,
    configuration: configurationNames === null ? null : Object.fromEntries(configurationNames.map((name) => [name, MASKED_VALUE])),
    application: proxy.applicationId === null ? null : shown ? { id: proxy.applicationId } : { redacted: true },
    ...(shown ? { application_id: proxy.applicationId! } : {}),
    require_auth: proxy.requireAuth,
    ...(key === undefined ? {} : { key }),
    key_credentials: proxy.maker === null ? null : { application_id: proxy.maker.applicationId, status: standing ?? 'current' },
    created_by: proxy.createdBy,
    created_at: formatIso(proxy.createdAt),
    modified_by: proxy.modifiedBy,
    modified_at: proxy.modifiedAt === null ? null : formatIso(proxy.modifiedAt),
  };
}
