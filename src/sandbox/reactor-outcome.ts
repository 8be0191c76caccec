/**
 * Turns what the sandbox reports about a failed run into a ReactorError. Statuses come from the
 * error class (checked inside the sandbox against the classes it defined), never from a property
 * reactor code could set, except for CustomHttpResponseError whose status is the reactor's to give.
 */
import { ReactorError } from '../errors/errors.js';
import type { SandboxLimits } from './sandbox.js';

/** The error description produced by the prelude's errors part (prelude-parts.ts). */
export interface SandboxErrorDescription {
  kind?: unknown;
  status?: unknown;
  message?: unknown;
  reason?: unknown;
  body?: unknown;
  headers?: unknown;
  /** Line of the reactor's code an unexpected (500) error was thrown from, when its stack shows one. */
  line?: unknown;
}

const MAX_MESSAGE_CHARS = 4096;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A 500 ReactorRuntimeError with a message written by the sandbox itself. */
export function runtimeError(message: string): ReactorError {
  return new ReactorError('ReactorRuntimeError', 500, message);
}

/** A 503 ServiceUnavailableError: the sandbox has no room for the run now (worker-pool.ts). */
export function unavailableError(message: string): ReactorError {
  return new ReactorError('ServiceUnavailableError', 503, message);
}

export function timeoutError(limits: SandboxLimits): ReactorError {
  return runtimeError(`Reactor exceeded its time limit of ${limits.timeoutMs} ms`);
}

export function memoryError(limits: SandboxLimits): ReactorError {
  return runtimeError(`Reactor exceeded its memory limit of ${limits.memoryBytes} bytes`);
}

export function stackError(): ReactorError {
  return runtimeError('Reactor exceeded its stack size limit (recursion or nesting too deep)');
}

export function toReactorError(d: SandboxErrorDescription, limits: SandboxLimits): ReactorError {
  const message = typeof d.message === 'string' ? d.message.slice(0, MAX_MESSAGE_CHARS) : '';
  switch (d.reason) {
    case 'memory':
      return memoryError(limits);
    case 'stack':
      return stackError();
    case 'no-function':
      return runtimeError(`Reactor code must set module.exports to a function (it is ${message || 'not set'})`);
    case 'unserializable':
      return runtimeError(`Reactor result is not JSON-serializable: ${message}`);
    case 'too-large':
      return runtimeError(`Reactor result exceeds the limit of ${limits.maxResultBytes} bytes`);
    case 'unserializable-error':
      return runtimeError(`Reactor error is not JSON-serializable: ${message}`);
    default:
      break;
  }
  const kind = typeof d.kind === 'string' && d.kind !== '' ? d.kind : 'ReactorRuntimeError';
  if (kind === 'CustomHttpResponseError') return customResponse(d, message);
  const status = typeof d.status === 'number' && Number.isInteger(d.status) && d.status >= 400 && d.status <= 599 ? d.status : 500;
  // Only unexpected errors get a line: a 4xx the reactor chose is its answer to the caller, word for word.
  const line = status === 500 && typeof d.line === 'number' && Number.isSafeInteger(d.line) && d.line > 0 ? d.line : undefined;
  return new ReactorError(kind, status, line === undefined ? message : `${message} (line ${line})`);
}

function customResponse(d: SandboxErrorDescription, message: string): ReactorError {
  const status = d.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
    return runtimeError('CustomHttpResponseError status must be an integer from 200 to 599');
  }
  const headers: Record<string, string> = {};
  if (d.headers !== null && typeof d.headers === 'object' && !Array.isArray(d.headers)) {
    for (const [name, value] of Object.entries(d.headers as Record<string, unknown>)) {
      if (!HEADER_NAME.test(name) || name === '__proto__' || value === undefined || value === null) continue;
      headers[name.toLowerCase()] = String(value).replace(/[\r\n]/g, ' ');
    }
  }
  return new ReactorError('CustomHttpResponseError', status, message, { body: d.body, headers });
}
