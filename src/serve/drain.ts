/**
 * The drain after SIGTERM, in order, all of it within drainTimeoutMs:
 *
 *  1. draining: readiness answers 503, and every inference not admitted yet is read in full and
 *     answered 503 with Retry-After (one admitted before still gets its 200); every answer closes
 *     its connection;
 *  2. the listening socket stays open for drainGraceMs, so a load balancer sees readiness fail and
 *     stops sending, and connections already waiting in the kernel's accept queue are accepted
 *     and answered instead of reset;
 *  3. stop listening — once the kernel holds no connection the server has not accepted
 *     (accept-queue.ts; closing the listener resets those), and after one more pass of the event
 *     loop's poll phase, so a grace timer that fired late does not close a queue nobody accepted
 *     from — close the idle keep-alive connections, and wait for every other connection to be
 *     answered and closed;
 *  4. release the backend.
 *
 * If the deadline comes first, every connection still open is cut off and the report says so (the
 * CLI exits DRAIN_CUT_SHORT_EXIT). `hurry` brings the deadline forward to the moment it settles (a
 * second SIGTERM: the operator will not wait). The steps are given, so the order is checked without sockets.
 */

export interface DrainSteps {
  /** Step 1: from now on, readiness and new requests 503, every answer closes its connection. */
  beginDraining(): void;
  /** Connections the kernel holds for the listener that the server has not accepted yet (undefined: cannot tell). */
  pendingAccepts(): number | undefined;
  /** Stop accepting; resolves when every connection has closed. */
  stopListening(): Promise<void>;
  closeIdle(): void;
  /** Cut off every connection still open; how many there were. */
  destroyAll(): number;
  closeBackend(): Promise<void>;
}

export interface DrainReport {
  /** The deadline came before everything was answered and closed. */
  readonly cutShort: boolean;
  /** Connections the deadline cut off. */
  readonly connectionsCut: number;
  /** Present when the hurry brought the deadline forward. */
  readonly hurried?: true;
}

const pollPass = () => new Promise<void>((r) => setImmediate(r));

export interface DrainOptions {
  readonly graceMs: number;
  readonly timeoutMs: number;
  /** Settles when the deadline is to come at once, whatever is still open (a second signal). */
  readonly hurry?: Promise<unknown>;
}

export async function runDrain(s: DrainSteps, o: DrainOptions): Promise<DrainReport> {
  let timer: NodeJS.Timeout | undefined;
  // Waits still pending when the drain ends (a hurry during the grace period) must not hold the process open.
  const waits = new Set<NodeJS.Timeout>();
  const after = (ms: number) =>
    new Promise<void>((r) => {
      const t = setTimeout(() => {
        waits.delete(t);
        r();
      }, ms);
      waits.add(t);
    });
  const timedOut = new Promise<'deadline'>((r) => {
    timer = setTimeout(() => r('deadline'), o.timeoutMs);
  });
  let hurried = false;
  const hurry = o.hurry
    ?.then(
      () => undefined,
      () => undefined,
    )
    .then(() => {
      hurried = true;
      return 'deadline' as const;
    });
  const deadline = hurry ? Promise.race([timedOut, hurry]) : timedOut;
  try {
    s.beginDraining();
    let due: 'deadline' | undefined = await Promise.race([after(o.graceMs).then(() => undefined), deadline]);
    while (due === undefined && (s.pendingAccepts() ?? 0) > 0) due = await Promise.race([after(5).then(() => undefined), deadline]);
    await pollPass();
    const closed = s.stopListening().then(() => 'closed' as const);
    s.closeIdle();
    const first = await Promise.race([closed, deadline]);
    const connectionsCut = first === 'deadline' ? s.destroyAll() : 0;
    // Everything answered means nothing is left in the backend; after a cut-off a request may still run: bounded too.
    const backendDeadline = first === 'deadline' ? Promise.resolve('deadline' as const) : deadline;
    const backend = await Promise.race([s.closeBackend().then(() => 'closed' as const), backendDeadline]);
    return { cutShort: first === 'deadline' || backend === 'deadline', connectionsCut, ...(hurried ? { hurried: true as const } : {}) };
  } finally {
    clearTimeout(timer);
    for (const t of waits) clearTimeout(t);
  }
}
