import type { StoredTokenIntent } from '../storage/store.js';
import { formatIso } from '../common/time.js';
import { type BankDetails, type CardDetails, intentDetails } from './card-details.js';

/** A token intent as the API returns it (Basis Theory's shape): never its data. */
export interface TokenIntentView {
  id: string;
  type: string;
  tenant_id: string;
  /** Only to callers whose token:read transform on the type's default container is reveal. */
  fingerprint?: string;
  card?: CardDetails;
  bank?: BankDetails;
  created_by: string;
  created_at: string;
  expires_at: string;
}

/** The view of an intent whose (decrypted, validated) data is `data`; `fingerprint` says whether the caller may see it. */
export function tokenIntentView(intent: StoredTokenIntent, data: unknown, fingerprint: boolean): TokenIntentView {
  const view = { id: intent.id, type: intent.type, tenant_id: intent.tenantId } as TokenIntentView;
  if (fingerprint && intent.fingerprint !== null) view.fingerprint = intent.fingerprint;
  Object.assign(view, intentDetails(intent.type, data));
  view.created_by = intent.createdBy;
  view.created_at = formatIso(intent.createdAt);
  view.expires_at = formatIso(intent.expiresAt);
  return view;
}
