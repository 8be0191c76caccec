/**
 * Two instances writing one tenant's audit chain at once (docs/audit.md): each batch locks the
 * tenant's chain head in its transaction, so the chain stays one line, every entry in it once,
 * whichever instance wrote or sealed it.
 */
import { expect, it } from 'vitest';
import { ALL_TOKEN_PERMISSIONS, REVEAL_ALL } from '../support/tokens.js';
import { describeEachSharedStore } from '../support/stores.js';

describeEachSharedStore('audit chain under two writers', (shared) => {
  it('stays linear and verifies clean while both instances read, update and flush concurrently', async () => {
    const { a, b, close } = await shared.open({ auditFlushMs: 5 });
    try {
      const app = await a.caller({ permissions: ALL_TOKEN_PERMISSIONS, rules: REVEAL_ALL });
      const onB = await b.authenticate(app.key);
      const tokens = await Promise.all(Array.from({ length: 4 }, (_, i) => a.tokens.create(app, { type: 'token', data: `v${i}` })));
      const admin = [await a.authenticate(a.adminKey), await b.authenticate(b.adminKey)] as const;
      for (let round = 0; round < 5; round++) {
        await Promise.all(
          tokens.flatMap((token, i) => [
            a.tokens.get(app, token.id),
            b.tokens.get(onB, token.id),
            // Updates write their entries in the token transaction, unsealed until a flush seals them.
            (i + round) % 2 === 0 ? a.tokens.update(app, token.id, { metadata: { round: String(round) } }) : b.tokens.update(onB, token.id, { metadata: { round: `b${round}` } }),
            a.logs.list(admin[0]),
            b.logs.list(admin[1]),
          ]),
        );
      }
      await a.logs.list(admin[0]);
      await b.logs.list(admin[1]);
      // An update's entry that no later flush of its instance picked up is sealed by the sweep's
      // audit step (docs/audit.md), as a running vault does at its interval.
      await a.sweep();
      const [result] = await a.operator.audit.verify({ tenantId: a.tenantId, pendingGraceMs: 0 });
      const rows = (await a.store.readAuditSince(0, 0, 100_000)).filter((e) => e.tenantId === a.tenantId);
      expect(result).toMatchObject({ broken: null, pendingSeal: 0, unverifiedPrefix: 0 });
      expect(result!.verified).toBe(rows.length);
      expect(result!.head.index).toBe(rows.length);
      // Both instances wrote into the one chain: each position once, from 1 to the head.
      expect(rows.map((r) => r.seal!.index).sort((x, y) => x - y)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
      expect(rows.filter((r) => r.operation === 'token:update')).toHaveLength(20);
    } finally {
      await close();
    }
  });
});
