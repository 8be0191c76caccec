/**
 * The slice of the job queue (src/jobs/job-queue.ts) webhook delivery uses: declared by shape, so
 * this module depends on what it calls and nothing more.
 */
export type JobOutcome = { status: 'done' } | { status: 'retry'; runAt: number; error: string };

export interface EnqueueJob {
  kind: string;
  tenantId: string | null;
  payload: unknown;
  runAt?: number;
  key?: string;
}

export interface DeliveryQueue {
  enqueue(input: EnqueueJob): Promise<string | null>;
}
