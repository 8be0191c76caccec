import { type Vault, type VaultOptions, assembleVault } from '../vault.js';
import type { OperatorTools } from './operator-tools.js';

/** A vault opened by its operator: the vault to hand to the application, and the operator tools beside it. */
export interface Operator extends OperatorTools {
  /** The ordinary vault (authorization per call): hand this, never the Operator, to the HTTP handler and application code. */
  readonly vault: Vault;
  /** Closes the vault (as `vault.close()`). */
  close(): Promise<void>;
}

/**
 * Opens a vault as `createVault` does (same options: the store and the master key or key provider)
 * and returns it with the operator tools: key rotation and re-encryption, listing tenants,
 * recovering an administrator. The tools take no Caller, so only whoever opens the vault holds
 * them: `operator.vault` gives no way back to them (docs/operations.md).
 * @example
 * import { openOperator } from 'tokenvault/operator';
 * const operator = await openOperator({ store, masterKey: process.env.TOKENVAULT_MASTER_KEY });
 * for (const tenant of await operator.listTenants()) await operator.keys.rotate(tenant.id);
 * const handler = createFetchHandler(operator.vault); // the application gets the vault only
 */
export async function openOperator(options: VaultOptions): Promise<Operator> {
  const { vault, operator } = await assembleVault(options);
  return Object.freeze({ ...operator, vault, close: () => vault.close() });
}
