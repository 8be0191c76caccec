import type { StoredTokenIntent } from '../storage/store.js';
import type { Transform } from '../permissions/permissions.js';
import { formatIso } from '../common/time.js';
import { type BankDetails, type CardDetails, type MaskedCardDetails, intentDetails } from './card-details.js';

/** A token intent as the API returns it (Basis Theory's shape): never its data. */
export interface TokenIntentView {
  id: string;
  type: string;
  tenant_id: string;
  /** Only to callers whose token:read transform on the type's default container is reveal. */
  fingerprint?: string;
  /** Under the caller's token:read transform on the type's default container (IntentDisclosure). */
  card?: CardDetails | MaskedCardDetails;
  bank?: BankDetails;
  created_by: string;
  created_at: string;
  expires_at: string;
}

/**
 * What a caller is shown of an intent: `summary`, the transform the card/bank summary is shown
 * under (reveal: all of it; mask: what the type's default mask shows; otherwise none), and whether
 * the fingerprint is shown.
 */
export interface IntentDisclosure {
  summary: Transform | null;
  fingerprint: boolean;
}

/** The view of an intent whose (decrypted, validated) data is `data`, as `shown` allows. */
export function tokenIntentView(intent: StoredTokenIntent, data: unknown, shown: IntentDisclosure): TokenIntentView {
  const view = { id: intent.id, type: intent.type, tenant_id: intent.tenantId } as TokenIntentView;
  if (shown.fingerprint && intent.fingerprint !== null) view.fingerprint = intent.fingerprint;
  if (shown.summary === 'reveal' || shown.summary === 'mask') Object.assign(view, intentDetails(intent.type, data, shown.summary));
  view.created_by = intent.createdBy;
  view.created_at = formatIso(intent.createdAt);
  view.expires_at = formatIso(intent.expiresAt);
  return view;
}
