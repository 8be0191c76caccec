/**
 * A small reference model of who may know what, written independently of src/ (no import from the
 * access-control code), for the no-leak property test. It answers these questions:
 * - which transform an application's rules grant for a permission on a token's containers;
 * - who is a tenant administrator (a management application holding application:create and
 *   application:update), and whether one application holds every grant of another ("covers" it):
 *   acting through another application (binding a reactor to it, changing code that runs as it,
 *   minting its keys, creating it, changing or deleting its grants) needs one or the other;
 * - who may change what a reactor or formula runs (its author or an administrator);
 * - which secret values, and which token ids, each application may know at a given state of the vault;
 * - what a token's fingerprint expression prints, and which tokens a deduplicating write may match.
 */
import fc from 'fast-check';
import type { AccessRule, Permission, Transform } from '../../src/permissions/permissions.js';

export const TOKEN_PERMISSIONS = ['token:create', 'token:read', 'token:update', 'token:delete', 'token:search', 'token:use'] as const satisfies readonly Permission[];
/** The containers tokens live in, and the containers rules name (ancestors included). */
export const TOKEN_CONTAINERS = ['/pci/high/', '/pci/low/', '/bank/high/', '/general/high/'] as const;
export const RULE_CONTAINERS = ['/', '/pci/', '/pci/high/', '/pci/low/', '/bank/', '/general/', '/general/high/'] as const;

/** Up to three access rules drawn over RULE_CONTAINERS, each granting some of `allowed`. */
export const rulesOf = (allowed: readonly Permission[]) =>
  fc.array(
    fc.record({
      priority: fc.integer({ min: 0, max: 3 }),
      container: fc.constantFrom(...RULE_CONTAINERS),
      transform: fc.constantFrom<Transform>('reveal', 'mask', 'redact'),
      permissions: fc.subarray([...allowed], { minLength: 1 }),
    }),
    { maxLength: 3 },
  );

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
 * A tenant administrator: a management application (never a session) holding both application:create
 * and application:update. It may act through any application. A management application holding
 * anything less (reactor:*, application:update alone) is not one.
 */
export function modelIsAdmin(app: ModelApp): boolean {
  return app.type === 'management' && app.bound === undefined && app.permissions.includes('application:create') && app.permissions.includes('application:update');
}

/**
 * Whether `caller` holds every grant of `target`, by brute force over every container a rule or a
 * token of the model can name: each permission of the target is held, and wherever the target is
 * granted it, the caller is granted it with a transform at least as revealing. (Being a management
 * application is no shortcut: see modelMayActAs.)
 */
export function modelCovers(caller: ModelApp, target: ModelApp): boolean {
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

/**
 * Whether `caller` may act through `target`: bind a reactor to it, change a reactor bound to it or
 * code that runs as it, mint or delete its keys, create it, change or delete its grants.
 */
export function modelMayActAs(caller: ModelApp, target: ModelApp): boolean {
  return modelIsAdmin(caller) || modelCovers(caller, target);
}

/** Whether `caller` may change what a reactor or formula created by `authorId` runs (code, configuration, declarations). */
export function modelMayRecode(caller: ModelApp, authorId: string): boolean {
  return modelIsAdmin(caller) || caller.id === authorId;
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
  /**
   * The fingerprint expression was changed from the type's default to the test's one, which prints
   * the first two characters of the number (card) or of the text (string token).
   */
  customFingerprint: boolean;
}

/**
 * What a token's fingerprint expression prints over `data` (equal prints are equal fingerprints):
 * the type's default (`{{ data.number }}` for a card, `{{ data | stringify }}` for a string token),
 * or the test's custom one (the first two characters).
 */
export function printedFingerprint(type: string, data: unknown, custom: boolean): string {
  const text = type === 'card' ? String((data as { number?: unknown }).number) : type === 'token' ? String(data) : JSON.stringify(data);
  if (custom) return text.slice(0, 2);
  return type === 'token' ? JSON.stringify(data) : text;
}

/**
 * The live tokens a deduplicating write of a token of `type` whose fingerprint prints `printed`
 * may answer with instead: the same type and fingerprint, and every one of `viewers` (the caller;
 * for a reactor's tokenize block also its invoker) may reveal it through token:read. Any other
 * token is not a duplicate: a new token is made, so the answer tells nothing about it.
 */
export function dedupeCandidates(tokens: Iterable<ModelToken>, type: string, printed: string, viewers: readonly ModelApp[], except?: string): ModelToken[] {
  return [...tokens].filter(
    (t) =>
      t.id !== except &&
      t.type === type &&
      printedFingerprint(t.type, t.data, t.customFingerprint) === printed &&
      viewers.every((viewer) => modelTransform(viewer, 'token:read', t.containers) === 'reveal'),
  );
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
 * by whoever wrote the data). An administrator may know everything: it may mint a key of any
 * application, or give itself any grant.
 */
export function learn(app: ModelApp, tokens: Iterable<ModelToken>, known: Set<string>): void {
  for (const token of tokens) {
    if (modelIsAdmin(app)) {
      for (const secret of secretsOf(token)) known.add(secret);
      continue;
    }
    // A search page shows the data under the token:search transform.
    const transforms = (['token:read', 'token:use', 'token:search'] as const).map((p) => modelTransform(app, p, token.containers));
    const sees = transforms.includes('reveal') || (token.customMask && transforms.includes('mask'));
    if (sees) for (const secret of secretsOf(token)) known.add(secret);
  }
}

/**
 * Whether `app` may know a token's id without having been told it: it may list it (token:read,
 * any transform) or find it by search (token:search, any transform), or it is an administrator.
 * (Ids it sent, and ids of tokens its own creates made, it knows too: the test adds those.)
 */
export function mayKnowId(app: ModelApp, token: Pick<ModelToken, 'containers'>): boolean {
  return modelIsAdmin(app) || modelTransform(app, 'token:read', token.containers) !== null || modelTransform(app, 'token:search', token.containers) !== null;
}

/** Completes a digit string with its Luhn check digit (a valid card number of fresh digits). */
export function luhn(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}
