import type { DeletedTokenRecord } from '../store.js';

// Rows as better-sqlite3 returns them, and their mapping to the Store's records.

export interface DeletedTokenRow {
  tenant_id: string;
  id: string;
  type: string;
  deleted_at: number;
  deleted_by: string;
}
export const toDeletedToken = (row: DeletedTokenRow): DeletedTokenRecord => ({
  tenantId: row.tenant_id,
  id: row.id,
  type: row.type,
  deletedAt: row.deleted_at,
  deletedBy: row.deleted_by,
});
