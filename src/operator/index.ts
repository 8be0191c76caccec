/**
 * tokenvault/operator: the tools of whoever holds the store and the master key (key rotation,
 * listing tenants, administrator recovery). They take no Caller, so they are not on the `Vault`:
 * `openOperator` opens the vault and hands them out beside it (docs/operations.md).
 */
export { openOperator } from './operator.js';
export type { Operator } from './operator.js';
export type { OperatorKeys, OperatorTools, ReencryptProgress } from './operator-tools.js';
