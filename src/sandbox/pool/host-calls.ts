/**
 * The main-thread side of a worker's host calls: `req.bt` functions and `fetch` run here, on behalf
 * of the run that asked (inside its scope, so a nested run started by the call is its child), and
 * their answers go back as JSON. Nothing of a host value or error crosses but its JSON or its
 * description (bridge.ts).
 */
import { describeHostError, type HostErrorDescription } from '../bridge.js';
import type { RunTask } from './run-task.js';
import type { CallMessage, FetchMessage } from '../worker-protocol.js';

/** What goes back to the worker: the value's JSON text (none for undefined) or the error's description. */
export interface HostAnswer {
  ok: boolean;
  json?: string;
  error?: HostErrorDescription;
}

/** Calls the `req.bt` function at `m.path` with the JSON arguments and answers with its JSON result. */
export function serveCall(task: RunTask, m: CallMessage, reply: (answer: HostAnswer) => void): void {
  const entry = task.api?.get(m.path);
  task
    .inScope(async () => {
      // Looked up by path in the host's own table: a name from the sandbox never walks a host object.
      if (entry === undefined) throw new TypeError(`bt.${m.path} is not a function`);
      const args: unknown = JSON.parse(m.argsJson);
      const value: unknown = await entry.fn.apply(entry.parent, Array.isArray(args) ? args : []);
      return value === undefined ? undefined : JSON.stringify(value);
    })
    .then(
      (json) => reply(json === undefined ? { ok: true } : { ok: true, json }),
      (error: unknown) => reply({ ok: false, error: safeDescribe(error, `bt.${m.path}`) }),
    );
}

/** Calls the run's host `fetch` (the egress-checked one) and answers with the response as JSON. */
export function serveFetch(task: RunTask, m: FetchMessage, reply: (answer: HostAnswer) => void): void {
  const fetchImpl = task.input.host.fetch;
  task
    .inScope(async () => {
      if (fetchImpl === null) throw new Error('fetch is not available to this reactor');
      const r = await fetchImpl(m.request);
      return JSON.stringify({ status: r.status, statusText: r.statusText, headers: r.headers, body: r.body });
    })
    .then(
      (json) => reply({ ok: true, json }),
      (error: unknown) => reply({ ok: false, error: { name: 'Error', status: 500, message: error instanceof Error ? error.message : 'fetch failed' } }),
    );
}

/** Hands the run's console output to the caller's `onLogs`; a throwing sink never changes the run's outcome. */
export function reportLogs(task: RunTask, lines: string[], truncated: boolean): void {
  if (task.input.onLogs === undefined || lines.length === 0) return;
  try {
    task.input.onLogs(lines, truncated);
  } catch {
    // The sink is the caller's logger: its failure is not the reactor's.
  }
}

function safeDescribe(error: unknown, what: string): HostErrorDescription {
  try {
    return describeHostError(error, what);
  } catch {
    return { name: 'Error', status: 500, message: 'Host call failed' };
  }
}
