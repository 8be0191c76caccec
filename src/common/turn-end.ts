/**
 * The host's `setImmediate` as it was when tokenvault loaded: runs a callback at the end of the
 * current event-loop turn. Writes that wait for the end of a turn (group commit, batched HTTP
 * responses) must still happen when a test installs fake timers later (`vi.useFakeTimers()`,
 * @sinonjs/fake-timers); through the faked global they would wait until the test advanced its clock.
 */
export const atTurnEnd: (callback: () => void) => void = globalThis.setImmediate;
