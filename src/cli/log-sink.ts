/**
 * Where the CLI's JSON log lines go: an asynchronous, buffered destination, so that logging a
 * request costs a string append, not a write system call of its own (docs/operations.md).
 */
import { pino } from 'pino';

/** A destination for whole log lines that can be drained before the process stops. */
export interface LogSink {
  write(line: string): void;
  /** Resolves once every line written so far has reached the file descriptor. */
  flush(): Promise<void>;
  /** Writes what is still buffered at once (exit and fatal-error handlers, which cannot wait). */
  flushSync(): void;
}

/**
 * Lines to file descriptor `fd` through pino's asynchronous destination (sonic-boom): a line is
 * appended to a buffer and written by the thread pool; lines logged while a write is under way go
 * out together in the next one. A failing descriptor (stderr closed) drops lines and never stops
 * the server: a log line can be lost, never data (the audit trail is in the store).
 */
export function asyncLogSink(fd: number): LogSink {
  const destination = pino.destination({ fd, sync: false });
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
  return {
    write(line) {
      submitted += Buffer.byteLength(line);
      destination.write(line);
    },
    flush() {
      if (written >= submitted) return Promise.resolve();
      return new Promise((resolve) => waiting.push(resolve));
    },
    flushSync() {
      if (written >= submitted) return;
      try {
        destination.flushSync();
      } catch {
        // Not ready yet or the descriptor failed: the lines are lost, as on a crash.
      }
    },
  };
}

/** Lines through a function, one call each (in-process CLI runs and tests inject `stderr`). */
export function directLogSink(write: (line: string) => void): LogSink {
  return { write, flush: () => Promise.resolve(), flushSync() {} };
}
