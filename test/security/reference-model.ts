/**
 * A small reference model of who may know what, written independently of src/ (no import from the
 * access-control code), for the no-leak property test. It answers three questions:
 * - which transform an application's rules grant for a permission on a token's containers;
 * - whether one application holds every grant of another (what binding a reactor needs);
 * - which secret values each application may know at a given state of the vault.
 */
import type { AccessRule, Permission, Transform } from '../../src/permissions.js';

export const TOKEN_PERMISSIONS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'] as const satisfies readonly Permission[];
/** The containers tokens live in, and the containers rules name (ancestors included). */
export const TOKEN_CONTAINERS = ['/pci/high/', '/pci/low/', '/bank/high/', '/general/high/'] as const;
export const RULE_CONTAINERS = ['/', '/pci/', '/pci/high/', '/pci/low/', '/bank/', '/general/', '/general/high/'] as const;

export interface ModelApp {
  id: string;
  type: 'public' | 'private' | 'management';
  permissions: readonly Permission[];
  rules: readonly AccessRule[];
  /**
   * A session: its grants never exceed those of the application that authorized it, as that
   * application is now. Each transform is the stricter of the two, and nothing where either grants nothing.
   */
  bound?: ModelApp;
}

const STRICTNESS: Record<Transform, number> = { reveal: 0, mask: 1, redact: 2 };

function effectiveRules(app: ModelApp): AccessRule[] {
  if (app.rules.length > 0) return [...app.rules].sort((a, b) => a.priority - b.priority);
  const masked = TOKEN_PERMISSIONS.filter((p) => p !== 'token:use' && app.permissions.includes(p));
  const rules: AccessRule[] = [];
  if (masked.length > 0) rules.push({ priority: 0, container: '/', transform: 'mask', permissions: masked });
  if (app.permissions.includes('token:use')) rules.push({ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] });
  return rules;
}

/** The transform `app` gets for `permission` on a token in `containers`; null when not granted. */
export function modelTransform(app: ModelApp, permission: Permission, containers: readonly string[]): Transform | null {
  if (app.bound !== undefined) {
    const own = modelTransform({ ...app, bound: undefined }, permission, containers);
    const bound = modelTransform(app.bound, permission, containers);
    if (own === null || bound === null) return null;
    return STRICTNESS[own] >= STRICTNESS[bound] ? own : bound;
  }
  if (!app.permissions.includes(permission)) return null;
  const rules = effectiveRules(app);
  let result: Transform | null = null;
  for (const container of containers) {
    const rule = rules.find((r) => r.permissions.includes(permission) && container.startsWith(r.container));
    if (!rule) return null;
    if (result === null || STRICTNESS[rule.transform] > STRICTNESS[result]) result = rule.transform;
  }
  return result;
}

/**
 * Whether `caller` holds every grant of `target`, by brute force over every container a rule or a
 * token of the model can name: each permission of the target is held, and wherever the target is
 * granted it, the caller is granted it with a transform at least as revealing. Management callers
 * may bind any application.
 */
export function modelCovers(caller: ModelApp, target: ModelApp): boolean {
  if (caller.type === 'management') return true;
  const containers = [...RULE_CONTAINERS, ...TOKEN_CONTAINERS, '/pci/high/deeper/', '/other/'];
  for (const permission of target.permissions) {
    if (!caller.permissions.includes(permission) || (caller.bound !== undefined && !caller.bound.permissions.includes(permission))) return false;
    for (const container of containers) {
      const theirs = modelTransform(target, permission, [container]);
      if (theirs === null) continue;
      const mine = modelTransform(caller, permission, [container]);
      if (mine === null || STRICTNESS[mine] > STRICTNESS[theirs]) return false;
    }
  }
  return true;
}

/** A live token as the owner (reveal on everything) sees it, plus what the model tracks about it. */
export interface ModelToken {
  id: string;
  type: string;
  containers: string[];
  data: unknown;
  expiresAt: string | null;
  /** A mask other than the type's default was set: mask-level readers may see any of the data. */
  customMask: boolean;
}

/**
 * The values a leak would show: a card's number and cvc, a string token's text. (A card's
 * expiration is shown by its default mask to every masked reader, so it is not tracked.)
 */
export function secretsOf(token: Pick<ModelToken, 'type' | 'data'>): string[] {
  if (token.type === 'card' && typeof token.data === 'object' && token.data !== null) {
    const { number, cvc } = token.data as { number?: unknown; cvc?: unknown };
    return [number, cvc].filter((value): value is string => typeof value === 'string');
  }
  return typeof token.data === 'string' ? [token.data] : [];
}

/**
 * Adds to `known` every secret `app` may see in the current state: everything of a token it may
 * reveal through token:read, token:search or token:use (a reactor receives token:use data), and everything of a
 * token with a custom mask it may read masked (that mask was set by someone who could reveal, or
 * by whoever wrote the data).
 */
export function learn(app: ModelApp, tokens: Iterable<ModelToken>, known: Set<string>): void {
  for (const token of tokens) {
    // A search page shows the data under the token:search transform.
    const transforms = (['token:read', 'token:use', 'token:search'] as const).map((p) => modelTransform(app, p, token.containers));
    const sees = transforms.includes('reveal') || (token.customMask && transforms.includes('mask'));
    if (sees) for (const secret of secretsOf(token)) known.add(secret);
  }
}
