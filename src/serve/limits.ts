/**
 * The bounds a server keeps on its connections and its shutdown (`veltair serve` flags; the
 * Kubernetes guide, docs/kubernetes.md, says how they fit a pod's termination grace period):
 *
 *  - drainGraceMs: after SIGTERM the listening socket stays open this long, answering readiness and
 *    new inferences 503, so a load balancer sees the pod leave before connections are refused;
 *  - drainTimeoutMs: the whole drain (grace included) ends by then; anything still open is cut
 *    off and the process exits DRAIN_CUT_SHORT_EXIT instead of 0;
 *  - headerTimeoutMs: a request's headers must arrive within this long of its first byte (408);
 *  - bodyTimeoutMs: a body that makes no progress for this long is answered 408 and closed;
 *  - sendTimeoutMs: an answer the client stops taking (nothing of it acknowledged or taken from the
 *    server's buffer for this long) is cut off: the connection is destroyed;
 *  - maxConnections: a connection beyond this many is answered 503 with Retry-After as it is
 *    accepted, and closed;
 *  - discardLimitBytes: after an early answer (413, or 503/404 before the body was read), at most
 *    this much of the rest of the body is read and discarded before the connection closes, so a
 *    client that writes its whole body before reading still gets the answer.
 */
export interface ServeLimits {
  readonly drainGraceMs: number;
  readonly drainTimeoutMs: number;
  readonly headerTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly sendTimeoutMs: number;
  readonly maxConnections: number;
  readonly discardLimitBytes: number;
}

export const DEFAULT_LIMITS: ServeLimits = {
  drainGraceMs: 3000,
  drainTimeoutMs: 30_000,
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  sendTimeoutMs: 10_000,
  maxConnections: 1024,
  discardLimitBytes: 128 * 1024 * 1024,
};

/** Exit status of `veltair serve` when the drain deadline cut a request or connection short (0: everything was answered). */
export const DRAIN_CUT_SHORT_EXIT = 3;
