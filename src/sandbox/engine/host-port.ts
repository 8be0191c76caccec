import type { QuickJSHandle } from 'quickjs-emscripten';

/** What the sandbox's bridge functions call on the host; implemented by the run that owns the context. */
export interface HostPort {
  /** `req.bt.<path>(...args)`; returns the handle of a QuickJS promise. */
  call(path: string, argsJson: string): QuickJSHandle;
  fetch(requestJson: string): QuickJSHandle;
  /** Returns false once the log buffer is full. */
  log(level: string, text: string): boolean;
  sleep(ms: number): QuickJSHandle;
}
