import type { ColumnChange } from './record-changes.js';
import type { ProxyChanges } from './proxy-store.js';

const json = (value: unknown) => JSON.stringify(value);

/** The columns a proxy update writes (fields present only; name_lower follows name, key_lookup follows the key). */
export function proxyColumns(changes: ProxyChanges): ColumnChange[] {
  const out: ColumnChange[] = [];
  const plain = (column: string, value: unknown) => out.push({ column, value, json: false });
  if (changes.name !== undefined) {
    plain('name', changes.name);
    plain('name_lower', changes.name.toLowerCase());
  }
  if (changes.destinationUrl !== undefined) plain('destination_url', changes.destinationUrl);
  if (changes.requestTransforms !== undefined) out.push({ column: 'request_transforms', value: json(changes.requestTransforms), json: true });
  if (changes.responseTransforms !== undefined) out.push({ column: 'response_transforms', value: json(changes.responseTransforms), json: true });
  if (changes.configuration !== undefined) plain('configuration', changes.configuration === null ? null : Buffer.from(changes.configuration));
  if (changes.applicationId !== undefined) plain('application_id', changes.applicationId);
  if (changes.boundGrants !== undefined) out.push({ column: 'bound_grants', value: changes.boundGrants === null ? null : json(changes.boundGrants), json: true });
  if (changes.requireAuth !== undefined) plain('require_auth', changes.requireAuth);
  if (changes.key !== undefined) {
    plain('key_hash', changes.key.keyHash);
    plain('key_lookup', changes.key.keyLookup);
  }
  if (changes.maker !== undefined) {
    plain('maker_application_id', changes.maker?.applicationId ?? null);
    plain('maker_generation', changes.maker?.credentialsGeneration ?? null);
  }
  plain('modified_by', changes.modifiedBy ?? null);
  plain('modified_at', changes.modifiedAt);
  return out;
}
