/**
 * What the HTTP handler reports about each request it answered, to an `onExchange` option: enough
 * for an access log and metrics, and by construction nothing more (no body, header, key or query).
 */
export interface ExchangeEvent {
  method: string;
  /** The route template (`/tokens/{id}`), or null when no route matched (404/405). */
  route: string | null;
  status: number;
  /** From the request's arrival at the handler to its response, in milliseconds. */
  durationMs: number;
  /** The authenticated application, or null (public route, or authentication failed). */
  applicationId: string | null;
}

/** Receives one event per answered request; it must not throw (what it throws is ignored). */
export type ExchangeObserver = (event: ExchangeEvent) => void;

/** Several observers as one (e.g. the access log and the metrics). */
export function observeAll(...observers: (ExchangeObserver | undefined)[]): ExchangeObserver | undefined {
  const present = observers.filter((o): o is ExchangeObserver => o !== undefined);
  if (present.length === 0) return undefined;
  if (present.length === 1) return present[0];
  return (event) => {
    for (const observer of present) observer(event);
  };
}
