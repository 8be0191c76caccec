/**
 * Messages between the main thread (worker-pool.ts) and a sandbox worker (sandbox-worker.ts). Values
 * cross as JSON text or plain structured-clone data; no function, class instance or error object
 * crosses, so what reaches either side is data, never a live host object.
 */
import { ReactorError } from '../errors/errors.js';
import type { HostErrorDescription } from './bridge.js';
import { runtimeError } from './reactor-outcome.js';
import type { HostFetchRequest, SandboxLimits } from './sandbox.js';

/** Main thread → worker: start a run (a worker may hold several, worker-pool.ts). */
export interface RunMessage {
  type: 'run';
  run: number;
  code: string;
  /** `{ args, configuration }` as JSON text. */
  reqJson: string;
  /** The `req.bt` function paths (`tokens.retrieve`, ...); null → `req.bt` is null. */
  btPaths: string[] | null;
  hasFetch: boolean;
  limits: SandboxLimits;
  /** Wall time left of the run's deadline when it was sent (ms). */
  budgetMs: number;
}

/** Main thread → worker: the answer to a host call. */
export interface ReplyMessage {
  type: 'reply';
  run: number;
  op: number;
  ok: boolean;
  /** ok: the JSON text of the value (undefined → undefined); failed: the error description. */
  json?: string;
  error?: HostErrorDescription;
}

export type ToWorker = RunMessage | ReplyMessage;

/** Worker → main thread: the engine is loaded (a worker that fails before this could not start). */
export interface ReadyMessage {
  type: 'ready';
}

/** Worker → main thread: a `req.bt` call (`argsJson` is the JSON array of arguments). */
export interface CallMessage {
  type: 'call';
  run: number;
  op: number;
  path: string;
  argsJson: string;
}

export interface FetchMessage {
  type: 'fetch';
  run: number;
  op: number;
  request: HostFetchRequest;
}

/** Worker → main thread: the run ended. */
export interface DoneMessage {
  type: 'done';
  run: number;
  ok: boolean;
  /** ok: the JSON text of the result. */
  resultJson?: string;
  error?: SerializedReactorError;
  logs: string[];
  logsTruncated: boolean;
  /** Size of the worker's WebAssembly memory after the run (it never shrinks). */
  wasmMemoryBytes: number;
}

export type FromWorker = ReadyMessage | CallMessage | FetchMessage | DoneMessage;

export interface SerializedReactorError {
  kind: string;
  status: number;
  message: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A run's failure as data. Anything but a ReactorError is a generic runtime error (nothing internal leaks). */
export function serializeRunError(error: unknown): SerializedReactorError {
  const e = error instanceof ReactorError ? error : runtimeError('Reactor failed in the sandbox');
  const out: SerializedReactorError = { kind: e.kind, status: e.status, message: e.message };
  if (e.body !== undefined) out.body = e.body;
  if (e.headers !== undefined) out.headers = e.headers;
  return out;
}

export function deserializeRunError(e: SerializedReactorError): ReactorError {
  const extra: { body?: unknown; headers?: Record<string, string> } = {};
  if (e.body !== undefined) extra.body = e.body;
  if (e.headers !== undefined) extra.headers = e.headers;
  return new ReactorError(e.kind, e.status, e.message, extra);
}
