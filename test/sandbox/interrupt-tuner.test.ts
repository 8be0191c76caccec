import { describe, expect, it } from 'vitest';
import { InterruptTuner, MAX_TICKS_BETWEEN_CHECKS } from '../../src/sandbox/engine/interrupt-tuner.js';
import { loadQuickJsModule } from '../../src/sandbox/engine/quickjs-module.js';

describe('InterruptTuner', () => {
  it('calibrates on the bundled QuickJS build', async () => {
    expect(InterruptTuner.calibrate(await loadQuickJsModule())).not.toBeNull();
  });

  it('checks the deadline every few ticks instead of every 10,000', async () => {
    const module = await loadQuickJsModule();
    const tuner = InterruptTuner.calibrate(module);
    expect(tuner).not.toBeNull();
    const count = (tuned: boolean): number => {
      const runtime = module.newRuntime();
      const context = runtime.newContext();
      let checks = 0;
      const handler = tuned ? tuner!.handler(context, performance.now() + 60_000, () => undefined) : () => false;
      runtime.setInterruptHandler(() => {
        checks++;
        return handler();
      });
      // A loop iteration is a tick or two; 2,000 iterations stay well under QuickJS's 10,000.
      const result = context.evalCode('for (let i = 0; i < 2000; i++) {}', 'count.js', { type: 'global' });
      (result.error ?? result.value).dispose();
      context.dispose();
      runtime.dispose();
      return checks;
    };
    expect(count(false)).toBeLessThanOrEqual(1);
    expect(count(true)).toBeGreaterThanOrEqual(2000 / MAX_TICKS_BETWEEN_CHECKS);
  });

  it('interrupts after the deadline and reports it', async () => {
    const module = await loadQuickJsModule();
    const tuner = InterruptTuner.calibrate(module)!;
    const runtime = module.newRuntime();
    const context = runtime.newContext();
    let reported = false;
    runtime.setInterruptHandler(tuner.handler(context, performance.now() - 1, () => (reported = true)));
    const result = context.evalCode('let n = 0; for (;;) n++', 'spin.js', { type: 'global' });
    expect(result.error).toBeDefined();
    expect(context.dump(result.error!)).toMatchObject({ name: 'InternalError', message: 'interrupted' });
    result.error!.dispose();
    expect(reported).toBe(true);
    context.dispose();
    runtime.dispose();
  });
});
