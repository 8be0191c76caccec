/**
 * Pre-configured proxies (`/proxies`, docs/proxies.md): create, read, replace, merge-patch, delete
 * and key rotation. The configuration is sealed with the tenant's data key before it is stored and
 * never shown again (its names only); the key is shown once, on create and rotation, and kept only
 * as its hash (as an API key). Binding an application, and changing a proxy bound to one, follow
 * the reactor rules (auth/binding-authz.ts, docs/authority.md); changing what a proxy does with the
 * data that passes through it (destination, transforms, configuration) is for its author or a
 * tenant administrator, as a reactor's code is. The destination follows the ephemeral proxy's URL
 * rules (proxy-destination.ts); its address is checked when the proxy is called. A proxy made by a
 * non-administrator answers to its maker's credentials (proxy-maker.ts): each change is audited and
 * announced, so an application's owners see the proxies made with its keys.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditLog } from '../audit/audit.js';
import { hashApiKey } from '../auth/api-keys.js';
import { mayBindTo, requireMayBind } from '../auth/binding-authz.js';
import { type Caller, requirePermission } from '../auth/caller.js';
import { boundGrantsFor } from '../auth/session-grants.js';
import type { Clock } from '../common/clock.js';
import { type PageQuery, type Paginated, parsePage, toPaginated } from '../common/pagination.js';
import { AuthorizationError, NotFoundError, ValidationError, concurrentChange, requireCreated } from '../errors/errors.js';
import { bindableApplication } from '../reactors/reactor-lookup.js';
import type { ApplicationRecord, ProxyChanges, ProxyMaker, ProxyRecord, Store } from '../storage/store.js';
import { sameJson } from '../common/same-json.js';
import { refuseNul } from '../validation/no-nul.js';
import { type DestinationRules, destinationUrl, unresolvedTarget } from './proxy-destination.js';
import { type CreateProxyRequest, type PatchProxyRequest, type ProxyInput, type UpdateProxyRequest, parseProxy, parseProxyPatch } from './proxies-input.js';
import { type ProxyView, proxyView } from './proxies-view.js';
import { confirmedMaker, keyStanding, makerOf } from './proxy-maker.js';
import { requireMayReconfigure, stripNullValues } from './proxy-change-rules.js';
import type { EventSink } from '../webhooks/webhook-events-emitter.js';
import type { EventType } from '../webhooks/webhook-events.js';

/** Proxy keys carry their own prefix: a leaked one is recognizable, and never taken for an API key. */
export const PROXY_KEY_PREFIX = 'tvp_';

export interface ListProxiesQuery extends PageQuery {
  /** Case-insensitive substring of the name; `*` matches any run of characters. */
  name?: string;
}

/** Seals and opens records with the tenant's data key (the vault's KeyRing). */
export interface ConfigurationSealer {
  sealRecord(tenantId: string, context: readonly string[], plaintext: Buffer): Promise<Buffer>;
  openRecord(tenantId: string, context: readonly string[], ciphertext: Uint8Array): Promise<Buffer>;
}

export class ProxiesService {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #audit: AuditLog;
  readonly #sealer: ConfigurationSealer;
  readonly #rules: DestinationRules;
  readonly #events: EventSink | undefined;

  constructor(deps: { store: Store; clock: Clock; audit: AuditLog; records: ConfigurationSealer; rules: DestinationRules; events?: EventSink }) {
    this.#events = deps.events;
    this.#store = deps.store;
    this.#clock = deps.clock;
    this.#audit = deps.audit;
    this.#sealer = deps.records;
    this.#rules = deps.rules;
  }

  /**
   * Creates a proxy (proxy:create); the answer holds its key, shown this once.
   * @example const proxy = await vault.proxies.create(admin, { name: 'charges', destination_url: 'https://api.example.com/v1/' });
   */
  async create(caller: Caller, body: CreateProxyRequest): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:create', null, async () => {
      requirePermission(caller, 'proxy:create');
      refuseNul(body, '');
      const input = this.#checked(parseProxy(body));
      const application = await bindableApplication(this.#store, caller.tenantId, input.applicationId);
      if (application) requireMayBind(caller, application);
      const id = randomUUID();
      const key = newProxyKey();
      const proxy: ProxyRecord = {
        id,
        tenantId: caller.tenantId,
        name: input.name,
        destinationUrl: input.destinationUrl,
        requestTransforms: input.requestTransforms,
        responseTransforms: input.responseTransforms,
        configuration: await this.#seal(caller.tenantId, id, input.configuration),
        applicationId: application?.id ?? null,
        boundGrants: application ? boundGrantsFor(caller, application) : null,
        requireAuth: input.requireAuth,
        ...hashApiKey(key),
        maker: await makerOf(this.#store, caller),
        createdBy: caller.applicationId,
        createdAt: this.#clock.now(),
        modifiedBy: null,
        modifiedAt: null,
      };
      requireCreated(await this.#store.createProxy(proxy), 'Proxy', id);
      this.#record(caller, 'proxy:create', id);
      await this.#emit(caller, 'proxy.created', proxy);
      return proxyView(proxy, names(input.configuration), true, key, await keyStanding(this.#store, proxy));
    });
  }

  /** A proxy of the caller's tenant (proxy:read); another tenant's is not found. */
  async get(caller: Caller, id: string): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:read', id, async () => {
      requirePermission(caller, 'proxy:read');
      refuseNul(id, 'id');
      const proxy = await this.#find(caller, id);
      this.#record(caller, 'proxy:read', id);
      return this.#view(caller, proxy);
    });
  }

  /** The tenant's proxies (proxy:read), filtered by a name pattern, paginated. */
  async list(caller: Caller, query: ListProxiesQuery = {}): Promise<Paginated<ProxyView>> {
    return this.#audit.guard(caller, 'proxy:list', null, async () => {
      requirePermission(caller, 'proxy:read');
      refuseNul(query, '');
      const q = query ?? {};
      if (q.name !== undefined && typeof q.name !== 'string') throw ValidationError.field('name', 'must be a string');
      const page = parsePage(q);
      const result = await this.#store.listProxies(caller.tenantId, q.name === undefined ? {} : { name: q.name }, page);
      const views = new Map<ProxyRecord, ProxyView>();
      for (const proxy of result.items) views.set(proxy, await this.#view(caller, proxy));
      this.#record(caller, 'proxy:list', null);
      return toPaginated(page, result, (proxy) => views.get(proxy) ?? null);
    });
  }

  /** Replaces a proxy (proxy:update, PUT): absent transforms, configuration and application are removed. */
  async update(caller: Caller, id: string, body: UpdateProxyRequest): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:update', id, async () => {
      requirePermission(caller, 'proxy:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      const bound = await this.#requireMayChange(caller, current);
      const input = this.#checked(parseProxy(body));
      return this.#save(caller, current, bound, input, true);
    });
  }

  /**
   * Changes what a JSON merge patch names (proxy:update, PATCH): configuration is merged into the
   * current one (a null value removes a name; null removes it all); lists are replaced whole.
   */
  async patch(caller: Caller, id: string, body: PatchProxyRequest): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:update', id, async () => {
      requirePermission(caller, 'proxy:update');
      refuseNul(id, 'id');
      refuseNul(body, '');
      const current = await this.#find(caller, id);
      const bound = await this.#requireMayChange(caller, current);
      const rawConfiguration = (body as { configuration?: unknown } | null)?.configuration;
      const patch = parseProxyPatch(stripNullValues(body));
      let configuration = await this.#open(current);
      if (rawConfiguration === null) configuration = null;
      else if (rawConfiguration !== undefined) {
        const merged: Record<string, string | number | boolean> = { ...(configuration ?? {}) };
        for (const [name, value] of Object.entries(rawConfiguration as Record<string, unknown>)) {
          if (value === null) delete merged[name];
          else merged[name] = patch.configuration![name]!;
        }
        configuration = merged;
      }
      const input = this.#checked({
        name: patch.name ?? current.name,
        destinationUrl: patch.destinationUrl ?? current.destinationUrl,
        requestTransforms: (patch.requestTransforms ?? current.requestTransforms) as ProxyInput['requestTransforms'],
        responseTransforms: (patch.responseTransforms ?? current.responseTransforms) as ProxyInput['responseTransforms'],
        configuration,
        applicationId: patch.applicationId === undefined ? current.applicationId : patch.applicationId,
        requireAuth: patch.requireAuth ?? current.requireAuth,
      });
      return this.#save(caller, current, bound, input, patch.applicationId !== undefined);
    });
  }

  /** Deletes a proxy (proxy:delete); its key stops working at once. */
  async delete(caller: Caller, id: string): Promise<void> {
    await this.#audit.guard(caller, 'proxy:delete', id, async () => {
      requirePermission(caller, 'proxy:delete');
      refuseNul(id, 'id');
      const current = await this.#find(caller, id);
      await this.#requireMayChange(caller, current);
      if (!(await this.#store.deleteProxy(caller.tenantId, id))) throw new NotFoundError('Proxy', id);
      this.#record(caller, 'proxy:delete', id);
      await this.#emit(caller, 'proxy.deleted', current);
    });
  }

  /** Gives a proxy a new key (proxy:update); the old one stops working. The answer holds the new key, shown this once. */
  async rotateKey(caller: Caller, id: string): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:rotate_key', id, async () => {
      requirePermission(caller, 'proxy:update');
      refuseNul(id, 'id');
      const current = await this.#find(caller, id);
      await this.#requireMayChange(caller, current);
      // A new key lets new callers in: for the author or an administrator, as a change of destination is.
      requireMayReconfigure(caller, current);
      const key = newProxyKey();
      // The new key stands on the rotating caller's credentials (an administrator's: on none).
      const changes = { key: hashApiKey(key), maker: await makerOf(this.#store, caller), modifiedBy: caller.applicationId, modifiedAt: this.#clock.now() };
      const result = await this.#store.updateProxy(caller.tenantId, id, changes, { applicationId: current.applicationId });
      if (result.status === 'not_found') throw new NotFoundError('Proxy', id);
      if (result.status === 'changed') throw concurrentChange('Proxy', id);
      this.#record(caller, 'proxy:rotate_key', id);
      await this.#emit(caller, 'proxy.key_rotated', result.record);
      return { ...(await this.#view(caller, result.record)), key };
    });
  }

  /**
   * Confirms a proxy whose key ended with its maker's credentials (proxy:update): it stands on the
   * maker's current credentials from now on, and ends again at their next change (who may, and
   * when it is a 409: confirmedMaker). The caller must also be one that may change the proxy.
   */
  async confirm(caller: Caller, id: string): Promise<ProxyView> {
    return this.#audit.guard(caller, 'proxy:confirm', id, async () => {
      requirePermission(caller, 'proxy:update');
      refuseNul(id, 'id');
      const current = await this.#find(caller, id);
      await this.#requireMayChange(caller, current);
      const maker = await confirmedMaker(this.#store, caller, current);
      let record = current;
      if (maker !== null) {
        const result = await this.#store.updateProxy(
          caller.tenantId,
          id,
          { maker, modifiedBy: caller.applicationId, modifiedAt: this.#clock.now() },
          { applicationId: current.applicationId },
        );
        if (result.status === 'not_found') throw new NotFoundError('Proxy', id);
        if (result.status === 'changed') throw concurrentChange('Proxy', id);
        record = result.record;
      }
      this.#record(caller, 'proxy:confirm', id);
      await this.#emit(caller, 'proxy.confirmed', record);
      return this.#view(caller, record);
    });
  }

  async #save(caller: Caller, current: ProxyRecord, bound: ApplicationRecord | null, input: ProxyInput, bind: boolean): Promise<ProxyView> {
    const configuration = await this.#open(current);
    const changesData =
      input.destinationUrl !== current.destinationUrl ||
      !sameJson(input.requestTransforms, current.requestTransforms) ||
      !sameJson(input.responseTransforms, current.responseTransforms) ||
      !sameJson(input.configuration, configuration) ||
      input.requireAuth !== current.requireAuth;
    if (changesData) requireMayReconfigure(caller, current);
    const application = await bindableApplication(this.#store, caller.tenantId, input.applicationId);
    if (application && application.id !== bound?.id) requireMayBind(caller, application);
    const rebinds = bind || (application?.id ?? null) !== current.applicationId;
    const changes: ProxyChanges = {
      name: input.name,
      destinationUrl: input.destinationUrl,
      requestTransforms: input.requestTransforms,
      responseTransforms: input.responseTransforms,
      ...(sameJson(input.configuration, configuration) ? {} : { configuration: await this.#seal(caller.tenantId, current.id, input.configuration) }),
      applicationId: application?.id ?? null,
      ...(rebinds ? { boundGrants: application ? boundGrantsFor(caller, application) : null } : {}),
      requireAuth: input.requireAuth,
      // What the proxy does now stands on the credentials of whoever changed it. An administrator's
      // change keeps the maker: the key (which may have left with a stolen one) is not new, so it
      // still ends with its maker's credentials; only a confirmation or a rotation takes it off them.
      ...(changesData ? await this.#changedMaker(caller) : {}),
      modifiedBy: caller.applicationId,
      modifiedAt: this.#clock.now(),
    };
    // Only while the proxy is still bound as it was when the caller's grants were checked.
    const result = await this.#store.updateProxy(caller.tenantId, current.id, changes, { applicationId: current.applicationId });
    if (result.status === 'not_found') throw new NotFoundError('Proxy', current.id);
    if (result.status === 'changed') throw concurrentChange('Proxy', current.id);
    this.#record(caller, 'proxy:update', current.id);
    await this.#emit(caller, 'proxy.updated', result.record);
    return proxyView(result.record, names(input.configuration), true, undefined, await keyStanding(this.#store, result.record));
  }

  /** The destination follows the ephemeral proxy's URL rules; a stored URL is the one checked. */
  #checked(input: ProxyInput): ProxyInput {
    const url = (() => {
      try {
        // The URL and port rules now; the addresses the name resolves to when the proxy is called.
        return unresolvedTarget(destinationUrl(input.destinationUrl, '', '', this.#rules), this.#rules).url;
      } catch (error) {
        if (error instanceof ValidationError)
          throw new ValidationError(Object.fromEntries(Object.entries(error.errors).map(([field, messages]) => [field === 'url' ? 'destination_url' : field, messages])));
        throw error;
      }
    })();
    return { ...input, destinationUrl: url.href };
  }

  async #find(caller: Caller, id: string): Promise<ProxyRecord> {
    const proxy = typeof id === 'string' ? await this.#store.getProxy(caller.tenantId, id) : null;
    if (!proxy) throw new NotFoundError('Proxy', String(id));
    return proxy;
  }

  async #requireMayChange(caller: Caller, current: ProxyRecord): Promise<ApplicationRecord | null> {
    const bound = current.applicationId === null ? null : await this.#store.getApplication(current.tenantId, current.applicationId);
    if (bound && !mayBindTo(caller, bound)) {
      throw new AuthorizationError(`Changing proxy '${current.id}' needs every permission and access grant of the application it is bound to`);
    }
    return bound;
  }

  async #view(caller: Caller, proxy: ProxyRecord): Promise<ProxyView> {
    const application = proxy.applicationId === null ? null : await this.#store.getApplication(proxy.tenantId, proxy.applicationId);
    return proxyView(proxy, names(await this.#open(proxy)), application !== null && mayBindTo(caller, application), undefined, await keyStanding(this.#store, proxy));
  }

  async #seal(tenantId: string, id: string, configuration: ProxyInput['configuration']): Promise<Uint8Array | null> {
    if (configuration === null) return null;
    return this.#sealer.sealRecord(tenantId, context(id), Buffer.from(JSON.stringify(configuration), 'utf8'));
  }

  /** The proxy's configuration in clear (for transforms, and to compare a change); never shown. */
  async #open(proxy: ProxyRecord): Promise<Record<string, string | number | boolean> | null> {
    if (proxy.configuration === null) return null;
    return JSON.parse((await this.#sealer.openRecord(proxy.tenantId, context(proxy.id), proxy.configuration)).toString('utf8')) as Record<string, string | number | boolean>;
  }

  /** Ids only (docs/webhooks.md): the proxy, the application whose credentials it stands on, and who acted. */
  async #changedMaker(caller: Caller): Promise<{ maker?: ProxyMaker }> {
    const maker = await makerOf(this.#store, caller);
    return maker === null ? {} : { maker };
  }

  async #emit(caller: Caller, type: EventType, proxy: ProxyRecord): Promise<void> {
    await this.#events?.emit(caller.tenantId, type, { proxy_id: proxy.id, maker_application_id: proxy.maker?.applicationId ?? null, actor: caller.applicationId });
  }

  #record(caller: Caller, operation: string, resourceId: string | null): void {
    this.#audit.record({ tenantId: caller.tenantId, actor: caller.applicationId, operation, resourceId, outcome: 'success' });
  }
}

/** The record is bound to its proxy: a sealed configuration copied to another proxy does not open. */
export const configurationContext = (id: string): string[] => ['proxy-configuration', id];
const context = configurationContext;

function newProxyKey(): string {
  return PROXY_KEY_PREFIX + randomBytes(32).toString('base64url');
}

function names(configuration: Record<string, unknown> | null): string[] | null {
  return configuration === null ? null : Object.keys(configuration);
}
