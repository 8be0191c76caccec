/**
 * Where the CLI's JSON log lines go: an asynchronous, buffered destination, so that logging a
 * request costs a string append, not a write system call of its own (docs/performance.md, Logging).
 */
import { writeSync } from 'node:fs';
import { pino } from 'pino';

/** A destination for whole log lines that can be drained before the process stops. */
export interface LogSink {
  write(line: string): void;
  /** Resolves once every line written so far has reached the file descriptor. */
  flush(): Promise<void>;
  /** Writes what is still buffered at once (exit and fatal-error handlers, which cannot wait). */
  flushSync(): void;
  /**
   * Has `produce` called first by every flush() and flushSync(), to log through this sink the lines
   * held elsewhere (serve's access log holds a turn's lines to the turn's end); returns its removal.
   */
  beforeFlush(produce: () => void): () => void;
}

/** The producers of a sink: added, removed, all run. */
function producers(): Pick<LogSink, 'beforeFlush'> & { run(): void } {
  const all = new Set<() => void>();
  return {
    beforeFlush(produce) {
      all.add(produce);
      return () => all.delete(produce);
    },
    run() {
      for (const produce of all) produce();
    },
  };
}

/** How long lines wait to be handed to the destination together, at most (docs/performance.md). */
export const LOG_HOLD_MS = 10;
/** Lines held past this many characters are handed over at once, whatever their age. */
const HOLD_CHARS = 64 * 1024;

// The host's timers as they were when the CLI loaded (a test's fake timers must not hold lines).
const startTimer = globalThis.setTimeout;
const stopTimer = globalThis.clearTimeout;

/**
 * Lines to file descriptor `fd` through pino's asynchronous destination (sonic-boom). A line is
 * appended to a string held here for at most LOG_HOLD_MS (or HOLD_CHARS characters), then handed
 * over in one piece, which the thread pool writes; pieces handed over while a write is under way go
 * out together in the next one. So a line costs a string append: handing each line over on its own
 * cost a byte count of the destination's growing buffer per line and, on a busy server, a thread
 * pool write every few lines: a large share of a token read's CPU in a profile of `tokenvault
 * serve` (docs/performance.md, "Figures behind the code's choices").
 * A failing descriptor (stderr closed) drops lines and never stops the server: a log line can be
 * lost, never data (the audit trail is in the store).
 */
export function asyncLogSink(fd: number): LogSink {
  const destination = pino.destination({ fd, sync: false });
  const heldElsewhere = producers();
  let held = '';
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Bytes handed over and bytes the descriptor accepted, to know when the buffer is empty
  // (sonic-boom's own flush() does not wait for a write in flight when it has no minimum length).
  let submitted = 0;
  let written = 0;
  let waiting: Array<() => void> = [];
  const settle = () => {
    if (written < submitted || waiting.length === 0) return;
    const done = waiting;
    waiting = [];
    for (const resolve of done) resolve();
  };
  destination.on('write', (bytes: number) => {
    written += bytes;
    settle();
  });
  destination.on('error', () => {
    // Lost lines count as settled: nothing more will be written of them.
    written = submitted;
    settle();
  });
  const handOver = () => {
    if (timer !== undefined) {
      stopTimer(timer);
      timer = undefined;
    }
    if (held === '') return;
    const piece = held;
    held = '';
    submitted += Buffer.byteLength(piece);
    destination.write(piece);
  };
  return {
    write(line) {
      held += line;
      if (held.length >= HOLD_CHARS) handOver();
      // Unreferenced: held lines never keep the process alive; on exit they are written by flushSync.
      else if (timer === undefined) timer = startTimer(handOver, LOG_HOLD_MS).unref();
    },
    beforeFlush: heldElsewhere.beforeFlush,
    flush() {
      heldElsewhere.run();
      handOver();
      if (written >= submitted) return Promise.resolve();
      return new Promise((resolve) => waiting.push(resolve));
    },
    flushSync() {
      heldElsewhere.run();
      // Nothing in flight: the held lines are written here and now (an asynchronous write started
      // from an exit handler may never finish).
      if (written >= submitted) {
        const piece = held;
        held = '';
        handOver();
        writeAllSync(fd, piece);
        return;
      }
      handOver();
      try {
        destination.flushSync();
      } catch {
        // Not ready yet or the descriptor failed: the lines are lost, as on a crash.
      }
    },
  };
}

/** Writes the whole text, waiting out a full pipe for up to about a second; lost on any other failure. */
function writeAllSync(fd: number, text: string): void {
  let bytes = Buffer.from(text);
  for (let waits = 0; bytes.length > 0 && waits < 1000;) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      waits++;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    }
  }
}

/** Lines through a function, one call each (in-process CLI runs and tests inject `stderr`). */
export function directLogSink(write: (line: string) => void): LogSink {
  const heldElsewhere = producers();
  return {
    write,
    beforeFlush: heldElsewhere.beforeFlush,
    flush() {
      heldElsewhere.run();
      return Promise.resolve();
    },
    flushSync: heldElsewhere.run,
  };
}
