import type { ApplicationType } from '../permissions/permissions.js';
import type { ApplicationRecord, DeclaredType, FormulaRecord, ReactorRecord } from '../storage/store.js';
import { formatIso } from '../common/time.js';

/** A reactor formula as the API returns it. */
export interface FormulaView {
  id: string;
  tenant_id: string;
  name: string;
  /** Always `private`: a tenant's own formula (the Basis Theory SDK reads it). */
  type: 'private';
  description: string | null;
  code: string;
  configuration: { name: string; description: string | null; type: 'string' | 'number' | 'boolean' }[];
  request_parameters: { name: string; description: string | null; type: DeclaredType; optional: boolean }[];
  created_by?: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

/**
 * A reactor as the API returns it (docs/reactors.md): its formula in full (or, for a reactor with inline
 * code, that `code` and no formula), its application in brief. A
 * caller that could not bind the reactor to its application (it lacks some grant of it) sees only
 * that one is bound: `application: { redacted: true }`, without its id, name or type.
 */
export interface ReactorView {
  id: string;
  tenant_id: string;
  name: string;
  formula?: FormulaView;
  /** Inline code (a reactor created with `code` instead of a formula). */
  code?: string;
  configuration: Record<string, unknown>;
  application?: { id: string; name: string; type: ApplicationType } | { redacted: true };
  created_by?: string;
  created_at: string;
  modified_by?: string;
  modified_at?: string;
}

/** The API view of a stored formula. */
export function formulaView(formula: FormulaRecord): FormulaView {
  const view: FormulaView = {
    id: formula.id,
    tenant_id: formula.tenantId,
    name: formula.name,
    type: 'private',
    description: formula.description,
    code: formula.code,
    configuration: formula.configuration.map((c) => ({ ...c })),
    request_parameters: formula.requestParameters.map((p) => ({ ...p })),
    created_at: formatIso(formula.createdAt),
  };
  stamp(view, formula);
  return view;
}

/**
 * The API view of a stored reactor, its formula in full. `application` is the reactor's application
 * record, or null when it has none (or it was deleted since: the view then shows none);
 * `applicationVisible` is false when the viewer may not learn which application it is.
 */
export function reactorView(reactor: ReactorRecord, formula: FormulaRecord | null, application: ApplicationRecord | null, applicationVisible: boolean): ReactorView {
  // Keys in this order: the formula (or code) before the configuration, as before inline code.
  const view = { id: reactor.id, tenant_id: reactor.tenantId, name: reactor.name } as ReactorView;
  if (formula !== null) view.formula = formulaView(formula);
  else if (reactor.code !== null) view.code = reactor.code;
  view.configuration = structuredClone(reactor.configuration);
  view.created_at = formatIso(reactor.createdAt);
  if (application !== null) view.application = applicationVisible ? { id: application.id, name: application.name, type: application.type } : { redacted: true };
  stamp(view, reactor);
  return view;
}

function stamp(
  view: { created_by?: string; modified_by?: string; modified_at?: string },
  record: { createdBy: string | null; modifiedBy: string | null; modifiedAt: number | null },
): void {
  if (record.createdBy !== null) view.created_by = record.createdBy;
  if (record.modifiedBy !== null) view.modified_by = record.modifiedBy;
  if (record.modifiedAt !== null) view.modified_at = formatIso(record.modifiedAt);
}
