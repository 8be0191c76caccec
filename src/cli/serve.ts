/** `tokenvault serve`: the HTTP API on embedded SQLite or PostgreSQL, with an access log and optional metrics. */
import { type Server, createServer } from 'node:http';
import * as v from 'valibot';
import { MIN_KEY_LENGTH } from '../auth/api-keys.js';
import { unexpectedErrorFields } from '../common/logger.js';
import { createFetchHandler } from '../http/index.js';
import { MAX_TRUSTED_PROXIES, type TrustForwardedFor, TrustForwardedForSchema } from '../http/client-address.js';
import { toNodeListener } from '../http/node.js';
import { accessLog, pinoVaultLogger } from '../observability/access-log.js';
import { observeAll } from '../observability/exchange-event.js';
import { observeAtTurnEnd } from '../observability/turn-end-observer.js';
import { type VaultMetrics, createMetrics } from '../observability/metrics.js';
import type { Vault } from '../vault.js';
import { CliError, type CliIo, UsageError, integerFlag, parse } from './io.js';
import { parseWithConfig } from './config-file.js';
import { aborted, listen, shutdown, urlOf } from './http-server.js';
import { behindProxyFlag, behindProxyListener } from './behind-proxy.js';
import { bootstrap } from './first-admin-key.js';
import { cliLogger } from './logging.js';
import { openOperatorAt } from './open-operator.js';
import { withSecretFiles } from './secret-files.js';
import { STORE_OPTIONS, storeTarget, TIMEOUT_HELP } from './store-target.js';
import { createTlsServer, readTls, tlsFiles } from './tls.js';
import { KEY_CUSTODY_ENV_HELP, KEY_CUSTODY_HELP, KEY_CUSTODY_OPTIONS, keyCustody } from './key-custody.js';
import { sealedStart } from './sealed-start.js';

export const SERVE_HELP = `Usage: tokenvault serve [options]

Options:
  --config <file>            Read options from a TOML file: each key is an option's name without
                             its dashes (port = 8443); a flag, then TOKENVAULT_<NAME> (TOKENVAULT_PORT),
                             overrides the file. Check one with 'tokenvault config check <file>'
  --port <n>                 Port to listen on; 0 picks a free one (default 8080)
  --host <addr>              Address to bind (default 127.0.0.1)
  --tls-cert <pem>           Serve HTTPS (TLS 1.2 or later) with this certificate chain and
  --tls-key <pem>            this private key; SIGHUP reads both again (a renewed certificate)
  --master-key-file <file>   Read the master key from this file (when TOKENVAULT_MASTER_KEY is unset)
  --postgres-password-file <file>
                             Read the PostgreSQL password from this file (when PGPASSWORD is unset)
  --db <file | :memory:>     SQLite database file (default ./tokenvault.db)
  --admin-key-file <file>    Where the first start writes the generated admin API key, mode 0600
                             (default <db>.admin-key; ./tokenvault.admin-key with --postgres)
  --print-admin-key          Print the generated admin API key on stdout instead (a log collector
                             keeps stdout: for a terminal only; :memory: always prints it)
  --synchronous <full|normal> SQLite durability of each commit (default full)
  --shared-db                Let other processes open the SQLite file while serving (by default
                             the server holds it exclusively: faster reads, see README)
  --postgres <url>           Use PostgreSQL instead of SQLite: postgres://user@host:5432/db
                             (instances sharing the database may run side by side)
  --postgres-schema <name>   Schema of the tokenvault tables (default public; created if missing)
  --postgres-prepared-statements <on|off>
                             Prepare each statement once per connection: half the database's CPU
                             per token read (default on; behind a pooler that loses them, such as
                             PgBouncer 1.18 in transaction mode, the first loss turns it off)
${TIMEOUT_HELP}  --header-prefix <prefix>   Header prefix: <prefix>-API-KEY, <prefix>-IDEMPOTENCY-KEY (default SVC)
  --max-body-bytes <n>       Largest request body accepted (default 1048576)
  --allow-private-network    Let reactor fetch, webhooks, reactor callbacks and /proxy reach
                             loopback and private addresses, and /proxy use http to loopback
                             (development)
  --allow-host <host>        A host reactor code may fetch (repeatable; *.example.com for subdomains)
  --trust-forwarded-for <n|list>
                             Whom X-Forwarded-For is believed from, for the per-address rate limit
                             of inbound proxies: n, the number of reverse proxies in front (1 to
                             ${MAX_TRUSTED_PROXIES}; 0, the default, believes none), or a comma-separated list of
                             their addresses or CIDR ranges (10.0.0.0/8,2001:db8::/32). Only what is
                             really in front: else clients name their own address
  --behind-proxy <list>      TLS ends at the reverse proxies at these addresses or CIDR ranges:
                             the API answers only them, only for clients that used https
                             (X-Forwarded-Proto), and believes their X-Forwarded-For; /healthz and
                             /readyz answer anyone. Not with --tls-cert (docs/production.md)
  --access-log <on|off>      One JSON line per request on stderr: method, route, status, duration,
                             application id (default on)
  --audit-retention <days>   Remove audit entries older than this (at least 1), behind a checkpoint
                             that keeps the chain verifiable (default: keep them all; docs/audit.md)
  --metrics-port <n>         Serve Prometheus metrics at GET /metrics on this port of --host
                             (a separate listener, off by default; it has no authentication)
${KEY_CUSTODY_HELP}  --admin-socket <path>      Where a sealed server takes shares (tokenvault unseal / seal): a Unix
                             socket, mode 0600 (default <db>.admin.sock; required with --postgres)
  --unseal-stdin             A sealed server first reads shares from standard input, one per line
  -h, --help                 Show this help

Environment:
  TOKENVAULT_MASTER_KEY      Base64 of 32 bytes. Without it, :memory: uses an ephemeral key and a
                             file database uses (or creates, mode 0600) <db>.key beside it.
                             Required with --postgres. Generate one with
                             node -e "console.log(require('crypto').randomBytes(32).toString('base64'))"
  TOKENVAULT_ADMIN_KEY       API key (at least ${MIN_KEY_LENGTH} characters) of the management application
                             created on a database with no tenant; when unset one is generated and
                             written to --admin-key-file.
  PGPASSWORD                 The PostgreSQL password, when the URL has none (a URL on the command
                             line is visible to other users in the process list).
${KEY_CUSTODY_ENV_HELP}`;

/** Runs the server until `io.signal` aborts, then drains in-flight requests and closes the store. */
export async function serve(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parse(() =>
    parseWithConfig(io.env, {
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: 'string', default: '8080' },
        host: { type: 'string', default: '127.0.0.1' },
        'admin-key-file': { type: 'string' },
        'print-admin-key': { type: 'boolean', default: false },
        'master-key-file': { type: 'string' },
        'postgres-password-file': { type: 'string' },
        'tls-cert': { type: 'string' },
        'tls-key': { type: 'string' },
        ...STORE_OPTIONS,
        synchronous: { type: 'string' },
        'shared-db': { type: 'boolean', default: false },
        'header-prefix': { type: 'string', default: 'SVC' },
        'max-body-bytes': { type: 'string', default: '1048576' },
        'allow-private-network': { type: 'boolean', default: false },
        'allow-host': { type: 'string', multiple: true },
        'trust-forwarded-for': { type: 'string' },
        'behind-proxy': { type: 'string' },
        'access-log': { type: 'string', default: 'on' },
        'metrics-port': { type: 'string' },
        'audit-retention': { type: 'string' },
        ...KEY_CUSTODY_OPTIONS,
        'admin-socket': { type: 'string' },
        'unseal-stdin': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }),
  );
  if (values.help) {
    io.stdout(SERVE_HELP);
    return 0;
  }
  io = withSecretFiles(io, values);
  const tls = tlsFiles(values['tls-cert'], values['tls-key']);
  const behindProxy = behindProxyFlag(values['behind-proxy']);
  // TLS ends in one place: a proxy that re-encrypts to the vault is served with --tls-cert alone.
  if (behindProxy && tls) throw new UsageError('--behind-proxy (TLS ended by the proxy in front) and --tls-cert/--tls-key (TLS ended here) exclude each other: choose one');
  // Behind the proxies, their X-Forwarded-For is believed unless --trust-forwarded-for says otherwise.
  const trustForwardedFor = values['trust-forwarded-for'] === undefined && behindProxy ? behindProxy : trustForwardedFlag(values['trust-forwarded-for']);
  if (tls) readTls(tls);
  const target = storeTarget(values);
  if (target.kind === 'sqlite') target.exclusive = !values['shared-db'];
  else if (values['shared-db']) throw new UsageError('--shared-db applies to SQLite (--db) only');
  const port = integerFlag('port', values.port, 0, 65535);
  const maxBodyBytes = integerFlag('max-body-bytes', values['max-body-bytes'], 1, 1024 ** 3);
  const metricsPort = values['metrics-port'] === undefined ? undefined : integerFlag('metrics-port', values['metrics-port'], 0, 65535);
  const auditRetention = values['audit-retention'] === undefined ? {} : { auditRetentionMs: integerFlag('audit-retention', values['audit-retention'], 1, 100_000) * 86_400_000 };
  if (values['access-log'] !== 'on' && values['access-log'] !== 'off') throw new UsageError("--access-log must be 'on' or 'off'");
  const adminKey = io.env['TOKENVAULT_ADMIN_KEY'];
  if (adminKey !== undefined && adminKey.length < MIN_KEY_LENGTH) {
    throw new CliError(`TOKENVAULT_ADMIN_KEY must be at least ${MIN_KEY_LENGTH} characters`);
  }
  // `tokenvault config check`: every option is checked; nothing opens.
  if (io.checkOnly) return 0;
  const log = cliLogger(io);
  const logger = pinoVaultLogger(log);
  const egress: { allowPrivateNetwork?: boolean; allowHosts?: string[] } = {};
  if (values['allow-private-network']) egress.allowPrivateNetwork = true;
  if (values['allow-host'] && values['allow-host'].length > 0) egress.allowHosts = values['allow-host'];

  // Before the vault, which reports its asynchronous runs to them.
  const metrics = metricsPort === undefined ? undefined : createMetrics();
  // The local key, an HSM, or a split key (sealed until unsealed): docs/key-custody.md.
  const custody = await keyCustody(values, target, io);
  if (custody.kind !== 'sealed' && (values['admin-socket'] !== undefined || values['unseal-stdin'])) {
    throw new UsageError(`--${values['unseal-stdin'] ? 'unseal-stdin' : 'admin-socket'} applies to a split master key (tokenvault keys split)`);
  }
  const keyProvider = custody.kind === 'local' ? {} : { keyProvider: custody.provider };
  // Only the vault goes on to the HTTP layer; of the operator tools serve uses only the tenant count (a sealed first start).
  const operator = await openOperatorAt(
    target,
    io,
    logger,
    { ...keyProvider, reactors: { egress, ...(metrics ? { onAsyncRun: metrics.observeAsyncRun, onRunTimes: metrics.observeReactorRunTimes } : {}) }, ...auditRetention },
    true,
  );
  const { vault } = operator;
  const isEmpty = async () => (await operator.listTenants()).length === 0;
  const sealed =
    custody.kind === 'sealed'
      ? await sealedStart(custody.provider, target, io, logger, values['admin-socket'], values['unseal-stdin'], isEmpty).catch(async (error: unknown) => {
          await vault.close();
          throw error;
        })
      : undefined;
  let server: Server | undefined;
  let stopReloading: (() => void) | undefined;
  let metricsServer: Server | undefined;
  // Each turn's access lines are formatted together at its end, when its responses are written
  // (src/observability/turn-end-observer.ts); every flush of the log, on exit too, formats those held first.
  const access = values['access-log'] === 'on' ? observeAtTurnEnd(accessLog(log)) : undefined;
  const stopHolding = access && io.log ? io.log.beforeFlush(access.flush) : undefined;
  try {
    if (metrics) reportJobQueue(metrics, vault);
    const onExchange = observeAll(access?.observe, metrics?.observe);
    const handler = createFetchHandler(vault, { headerPrefix: values['header-prefix'], maxBodyBytes, logger, trustForwardedFor, ...(onExchange ? { onExchange } : {}) });
    // Instances sharing a PostgreSQL database may start together: one of them creates the tenant.
    const created = await bootstrap(vault, target, { given: adminKey, file: values['admin-key-file'], print: values['print-admin-key'] });
    const api = toNodeListener(handler, { writeAtTurnEnd: true, logger });
    const listener = behindProxy ? behindProxyListener(api, behindProxy) : api;
    if (tls) {
      const secure = createTlsServer(listener, tls, logger);
      server = secure.server;
      process.on('SIGHUP', secure.reload);
      stopReloading = () => process.off('SIGHUP', secure.reload);
    } else {
      server = createServer(listener);
    }
    const url = urlOf(await listen(server, port, values.host), tls ? 'https' : 'http');
    let announcement = `listening on ${url}\n`;
    if (metrics && metricsPort !== undefined) {
      metricsServer = createServer((req, res) => {
        serveMetrics(metrics, req.method, req.url, res).catch((error: unknown) => {
          logger.error('metrics request failed', unexpectedErrorFields(error));
          res.destroy();
        });
      });
      announcement += `metrics on ${urlOf(await listen(metricsServer, metricsPort, values.host))}/metrics\n`;
    }
    // Background work (async reactor runs, webhook deliveries, the sweep) runs with the server.
    vault.worker.start();
    // The admin key comes last, in the same write as the listening line: the last thing printed.
    io.stdout(announcement + created);
    io.onListening?.(url);
    await aborted(io.signal);
    io.stderr('tokenvault: shutting down (draining in-flight requests)\n');
    await shutdown(server);
    server = undefined;
    return 0;
  } finally {
    stopReloading?.();
    if (server) await shutdown(server).catch(() => undefined);
    if (metricsServer) await shutdown(metricsServer).catch(() => undefined);
    if (sealed) await sealed.close();
    // Every request is answered: the last access lines come before the vault's closing entries.
    access?.flush();
    try {
      await vault.close();
    } finally {
      // The last requests' access lines and the vault's closing entries reach stderr before we return.
      await io.log?.flush();
      stopHolding?.();
    }
  }
}

/**
 * `--trust-forwarded-for <n|list>`: a whole number is a count of reverse proxies, anything else a
 * comma-separated list of their addresses (docs/proxies.md, Calling a pre-configured proxy); checked
 * with the handler's own schema here, before anything opens, so a bad value is a usage error naming the flag.
 */
function trustForwardedFlag(value: string | undefined): TrustForwardedFor {
  if (value === undefined) return false;
  const text = value.trim();
  const candidate: number | string[] = /^\d+$/.test(text)
    ? Number(text)
    : text
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
  const checked = v.safeParse(TrustForwardedForSchema, candidate);
  if (checked.success) return checked.output;
  const issue = checked.issues[0];
  const index = issue.path?.[0]?.key;
  if (!Array.isArray(candidate) || typeof index !== 'number') throw new UsageError(`--trust-forwarded-for ${issue.message}`);
  // One word that is no address may have been meant as the count.
  const alternative = candidate.length === 1 ? ` (or a number of reverse proxies, 0 to ${MAX_TRUSTED_PROXIES})` : '';
  throw new UsageError(`--trust-forwarded-for: '${candidate[index]}' ${issue.message}${alternative}`);
}

/** The job queue's depth, once the store can count due jobs (the async job worker adds that). */
function reportJobQueue(metrics: VaultMetrics, vault: Vault): void {
  metrics.setJobQueueDepth(() => vault.worker.depth());
  metrics.setAuditStats(() => vault.auditStats());
  metrics.setSweepStats(() => vault.sweepStats());
}

async function serveMetrics(metrics: VaultMetrics, method: string | undefined, url: string | undefined, res: import('node:http').ServerResponse): Promise<void> {
  if (method !== 'GET' || (url ?? '').split('?')[0] !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
    return;
  }
  try {
    const text = await metrics.render();
    res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(text);
  } catch {
    res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
  }
}
