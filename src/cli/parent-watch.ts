/**
 * `npx tokenvault serve` (or any npm command) under a supervisor: the supervisor signals npm, which
 * may exit without passing the signal on, and the server, re-parented, would keep serving and
 * holding its database. Started by npm (it sets `npm_command`), the server polls its parent process
 * id and stops, as on SIGTERM, once npm is gone. Started any other way (directly, by systemd, by a
 * shell with nohup) it does not watch: outliving a shell is what those launches may want.
 */

/** How often the parent is looked at: a stop comes at most this late after npm is gone. */
const WATCH_INTERVAL_MS = 250;

/** True when npm (`npm start`, `npm exec`/npx, `npm run`) launched this process. */
export function launchedByNpm(env: Readonly<Record<string, string | undefined>>): boolean {
  return env['npm_command'] !== undefined && env['npm_command'] !== '';
}

/**
 * Calls `onGone` once when the parent process id changes (the parent exited and the process was
 * re-parented). Returns a function that stops watching. The timer never keeps the process alive.
 */
export function watchParent(onGone: () => void, readParent: () => number = () => process.ppid, intervalMs = WATCH_INTERVAL_MS): () => void {
  const parent = readParent();
  const timer = setInterval(() => {
    if (readParent() === parent) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
