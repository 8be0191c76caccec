import type { Logger } from '../common/logger.js';
import type { ReactorRunFinished } from '../reactors/async-runs.js';
import { formatIso } from '../common/time.js';
import type { Deliveries } from './deliveries.js';
import type { EventSink } from './webhook-events-emitter.js';

export type { ReactorRunFinished } from '../reactors/async-runs.js';

/**
 * The async-run hook: a signed callback to the request's `callback_url` carrying the result (or the
 * error problem), and the `reactor.completed` / `reactor.failed` event for event webhooks, which
 * carries ids and the status only. The callback is a delivery like any other (same signing, retries
 * and SSRF checks); its attempts are listed by `GET /webhook-deliveries?request_id=…`.
 */
export function reactorCallbacks(deps: { deliveries: Deliveries; events: EventSink; logger: Logger }): (event: ReactorRunFinished) => Promise<void> {
  return async (event) => {
    const type = event.status === 'completed' ? 'reactor.completed' : 'reactor.failed';
    const timestamp = formatIso(event.completedAt);
    const ids = { request_id: event.requestId, reactor_id: event.reactorId, status: event.status };
    if (event.callbackUrl !== null) {
      const data: Record<string, unknown> = { ...ids };
      if (event.status === 'completed') data['result'] = event.result ?? {};
      else if (event.error !== undefined) data['error'] = event.error;
      try {
        await deps.deliveries.create({
          tenantId: event.tenantId,
          webhookId: null,
          requestId: event.requestId,
          url: event.callbackUrl,
          payload: { id: `evt_${event.requestId.replaceAll('-', '')}`, type, timestamp, data },
        });
      } catch (error) {
        deps.logger.error('reactor callback not recorded', { tenantId: event.tenantId, requestId: event.requestId, error: (error as Error).name });
      }
    }
    await deps.events.emit(event.tenantId, type, { ...ids, application_id: event.applicationId });
  };
}
