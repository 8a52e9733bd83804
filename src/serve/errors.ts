/**
 * What the server answers when a request cannot be served: an HTTP status and one message naming
 * what was wrong and what was expected. The KServe v2 protocol's error body is `{ "error": message }`.
 */
export class ServeError extends Error {
  constructor(
    readonly status: 400 | 404 | 413 | 415 | 503,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ServeError';
  }
}

export const badRequest = (message: string) => new ServeError(400, message);
export const notFound = (message: string) => new ServeError(404, message);
export const unavailable = (message: string, retryAfterSeconds: number) => new ServeError(503, message, retryAfterSeconds);
