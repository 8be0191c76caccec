/**
 * Entry point of a sandbox worker thread (built as `dist/sandbox-worker.js`): one QuickJS engine.
 * Host capabilities stay on the main thread: `req.bt` calls and `fetch` are posted to it and their
 * answers come back as JSON, as they did when the sandbox ran in-thread.
 *
 * Several runs may be in progress here at once (the pool gives a worker another run of the same
 * owner while its runs await the host, worker-pool.ts): each has its own QuickJS runtime and context
 * and its own host calls; JavaScript runs one at a time on this thread, and a run starts when the
 * thread is free, i.e. when every other run is waiting.
 *
 * The main thread owns the deadline: the engine stops CPU-bound code at it (interrupt handler), and
 * when it cannot (one long built-in call, which QuickJS never interrupts) the main thread ends the
 * worker with `terminate()`. Nothing here needs to clean up after that.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DescribedHostError } from '../bridge.js';
import { createQuickJsEngine } from './quickjs-engine.js';
import type { HostApiTree, HostFetch, HostFetchResponse, SandboxHost } from '../sandbox.js';
import { type FromWorker, type ReplyMessage, type RunMessage, type ToWorker, serializeRunError } from '../worker-protocol.js';

const port = parentPort;
if (port === null) throw new Error('sandbox-worker.js runs in a worker thread');

/** One prepared context by default: the next run's, prepared while the worker waits. */
const engine = await createQuickJsEngine({ poolSize: (workerData as { contextPoolSize?: number } | null)?.contextPoolSize ?? 1 });
const pending = new Map<number, { run: number; resolve: (value: unknown) => void; reject: (error: Error) => void }>();
let nextOp = 0;

function post(message: FromWorker): void {
  port!.postMessage(message);
}

function ask(run: number, send: (op: number) => FromWorker): Promise<unknown> {
  const op = ++nextOp;
  return new Promise((resolve, reject) => {
    pending.set(op, { run, resolve, reject });
    post(send(op));
  });
}

function answer(message: ReplyMessage): void {
  const waiting = pending.get(message.op);
  if (waiting === undefined) return;
  pending.delete(message.op);
  if (message.ok) waiting.resolve(message.json === undefined ? undefined : JSON.parse(message.json));
  else waiting.reject(new DescribedHostError(message.error ?? { name: 'Error', message: 'Host call failed', status: 500 }));
}

/** `req.bt` for a run: the same paths as the host's tree, each posting its call to the main thread. */
function btTree(run: number, paths: string[]): HostApiTree {
  const root: HostApiTree = {};
  for (const path of paths) {
    const names = path.split('.');
    let node = root;
    for (const name of names.slice(0, -1)) {
      const child = node[name];
      node = typeof child === 'object' ? child : (node[name] = {});
    }
    node[names[names.length - 1]!] = (...args: unknown[]) => ask(run, (op) => ({ type: 'call', run, op, path, argsJson: JSON.stringify(args) }));
  }
  return root;
}

function fetchFor(run: number): HostFetch {
  return async (request) => {
    try {
      return (await ask(run, (op) => ({ type: 'fetch', run, op, request }))) as HostFetchResponse;
    } catch (error) {
      // The sandbox shows a fetch failure as a TypeError with the message alone.
      throw new Error(error instanceof DescribedHostError ? error.description.message : 'fetch failed');
    }
  };
}

async function start(message: RunMessage): Promise<void> {
  const { run } = message;
  const host: SandboxHost = {
    bt: message.btPaths === null ? null : btTree(run, message.btPaths),
    fetch: message.hasFetch ? fetchFor(run) : null,
  };
  let logs: readonly string[] = [];
  let logsTruncated = false;
  const base = { type: 'done' as const, run };
  try {
    const out = await engine.runJson(
      {
        code: message.code,
        reqJson: message.reqJson,
        host,
        limits: message.limits,
        onLogs: (lines, truncated) => {
          logs = lines;
          logsTruncated = truncated;
        },
      },
      message.budgetMs,
    );
    post({ ...base, ok: true, resultJson: JSON.stringify(out.result ?? null), logs: out.logs, logsTruncated: out.logsTruncated, wasmMemoryBytes: memory() });
  } catch (error) {
    post({ ...base, ok: false, error: serializeRunError(error), logs: [...logs], logsTruncated, wasmMemoryBytes: memory() });
  } finally {
    // Host calls still in flight belong to the finished run: their answers are dropped.
    for (const [op, waiting] of pending) if (waiting.run === run) pending.delete(op);
  }
}

function memory(): number {
  return engine.stats().wasmMemoryBytes;
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'reply') answer(message);
  // eslint-disable-next-line @typescript-eslint/no-floating-promises -- start() posts its own failure; anything escaping it ends this worker, which the pool handles as a crash (the run fails, a worker replaces it)
  else void start(message);
});
post({ type: 'ready' });
