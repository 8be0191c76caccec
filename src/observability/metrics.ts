import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ExchangeObserver } from './exchange-event.js';

/** Prometheus metrics of a tokenvault HTTP handler. */
export interface VaultMetrics {
  /** The registry holding them (add your own, or scrape it yourself). */
  readonly registry: Registry;
  /** Pass as the handler's `onExchange` option (or combine with `observeAll`). */
  readonly observe: ExchangeObserver;
  /**
   * Pass as the vault's `reactors.onAsyncRun` option: each asynchronous run that ends counts in
   * `tokenvault_reactor_runs_total` with its status (200, or its problem's status).
   */
  readonly observeAsyncRun: (event: { status: number }) => void;
  /**
   * Pass as the vault's `reactors.onRunTimes` option: each reactor run's wait for a sandbox worker
   * goes into `tokenvault_reactor_queue_wait_seconds`, and its run time, from its worker taking it
   * to its end, into `tokenvault_reactor_run_seconds` (the two are apart: waiting is not running).
   */
  readonly observeReactorRunTimes: (times: { queuedMs: number; runMs: number | null }) => void;
  /**
   * Reports the job queue's depth (jobs due now) as `tokenvault_job_queue_depth`, read on each
   * scrape. Until one is set the gauge reads 0.
   */
  setJobQueueDepth(read: () => number | Promise<number>): void;
  /**
   * Reports the audit queue (`vault.auditStats`) as `tokenvault_audit_queued`,
   * `tokenvault_audit_flush_failures_total` and `tokenvault_audit_dropped_entries_total`, read on
   * each scrape: failed flushes are retried, so a rising failure count with nothing dropped is an
   * outage survived; dropped entries are audit lost in a long one.
   */
  setAuditStats(read: () => AuditStats): void;
  /**
   * Reports the sweep (`vault.sweepStats`) as `tokenvault_sweep_unreadable_rows_total` (stored
   * rows the sweep could not open: damaged, counted, logged by id and skipped) and
   * `tokenvault_sweep_failures_total{concern}` (failed runs of each concern, each retried), read on
   * each scrape. Either rising is an alert: a damaged row, or a store failing on that concern.
   */
  setSweepStats(read: () => SweepStats): void;
  /** The Prometheus text exposition of every metric. */
  render(): Promise<string>;
  /** Its content type. */
  readonly contentType: string;
}

/** What `vault.auditStats()` reports. */
export interface AuditStats {
  queued: number;
  flushFailures: number;
  droppedEntries: number;
}

/** What `vault.sweepStats()` reports (SweepStats of the core, restated so metrics needs no core import). */
export interface SweepStats {
  unreadableRows: number;
  failures: Readonly<Record<string, number>>;
}

/** Route templates that run a reactor: their requests count as reactor runs. */
const REACTOR_RUN = /\/react$/;

/**
 * Creates the metrics: `tokenvault_http_requests_total{method,route,status}`,
 * `tokenvault_http_request_duration_seconds{method,route}` (histogram),
 * `tokenvault_reactor_runs_total{status}` (reactor runs: synchronous HTTP invocations by response
 * status, asynchronous runs by outcome when they end, through `observeAsyncRun`) and
 * `tokenvault_job_queue_depth`. Labels are route templates, never raw paths, so the series stay few
 * and no id reaches the scrape.
 */
export function createMetrics(options: { registry?: Registry } = {}): VaultMetrics {
  const registry = options.registry ?? new Registry();
  const requests = new Counter({
    name: 'tokenvault_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'tokenvault_http_request_duration_seconds',
    help: 'Time from a request reaching the handler to its response, by method and route template',
    labelNames: ['method', 'route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const reactorRuns = new Counter({
    name: 'tokenvault_reactor_runs_total',
    help: 'Reactor runs, by status: synchronous invocations by HTTP response status, asynchronous runs by outcome when they end',
    labelNames: ['status'] as const,
    registers: [registry],
  });
  const runBuckets = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  const queueWait = new Histogram({
    name: 'tokenvault_reactor_queue_wait_seconds',
    help: 'Time reactor runs waited for a sandbox worker (not part of their time limit)',
    buckets: runBuckets,
    registers: [registry],
  });
  const runTime = new Histogram({
    name: 'tokenvault_reactor_run_seconds',
    help: 'Time reactor runs ran, from their worker taking them to their end (their time limit counts this)',
    buckets: runBuckets,
    registers: [registry],
  });
  let readDepth: (() => number | Promise<number>) | undefined;
  new Gauge({
    name: 'tokenvault_job_queue_depth',
    help: 'Jobs due to run now (0 until the job queue reports)',
    registers: [registry],
    async collect() {
      this.set(readDepth === undefined ? 0 : await readDepth());
    },
  });
  let readAudit: (() => AuditStats) | undefined;
  const auditGauge = (name: string, help: string, pick: (stats: AuditStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(readAudit === undefined ? 0 : pick(readAudit()));
      },
    });
  auditGauge('tokenvault_audit_queued', 'Audit entries waiting to be written', (s) => s.queued);
  // Gauges, not counters: the vault keeps the running totals, the scrape only reads them.
  auditGauge('tokenvault_audit_flush_failures_total', 'Audit batch writes that failed (their entries were kept and retried)', (s) => s.flushFailures);
  auditGauge('tokenvault_audit_dropped_entries_total', 'Audit entries dropped because the queue was full during a long outage', (s) => s.droppedEntries);
  let readSweep: (() => SweepStats) | undefined;
  new Gauge({
    name: 'tokenvault_sweep_unreadable_rows_total',
    help: 'Stored rows the sweep could not open (damaged): each was logged by tenant and id, skipped, and is tried again after an hour, then up to a day',
    registers: [registry],
    collect() {
      this.set(readSweep === undefined ? 0 : readSweep().unreadableRows);
    },
  });
  new Gauge({
    name: 'tokenvault_sweep_failures_total',
    help: 'Failed runs of each sweep concern (each retried with backoff, at most one sweep interval later)',
    labelNames: ['concern'] as const,
    registers: [registry],
    collect() {
      if (readSweep === undefined) return;
      for (const [concern, n] of Object.entries(readSweep().failures)) this.set({ concern }, n);
    },
  });
  return {
    registry,
    contentType: registry.contentType,
    observe(event) {
      const route = event.route ?? '(no route)';
      const status = String(event.status);
      requests.inc({ method: event.method, route, status });
      latency.observe({ method: event.method, route }, event.durationMs / 1000);
      // A 202 accepted an asynchronous run (callback_url): it counts when it ends (observeAsyncRun).
      if (event.route !== null && REACTOR_RUN.test(event.route) && event.status !== 202) reactorRuns.inc({ status });
    },
    observeAsyncRun(event) {
      reactorRuns.inc({ status: String(event.status) });
    },
    observeReactorRunTimes(times) {
      queueWait.observe(times.queuedMs / 1000);
      if (times.runMs !== null) runTime.observe(times.runMs / 1000);
    },
    setJobQueueDepth(read) {
      readDepth = read;
    },
    setAuditStats(read) {
      readAudit = read;
    },
    setSweepStats(read) {
      readSweep = read;
    },
    render: () => registry.metrics(),
  };
}
