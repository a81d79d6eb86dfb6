/**
 * A tiny typed event emitter. Core has no runtime dependencies and must run wherever the
 * adapters run, so it does not use node:events. Listener errors are isolated: a broken metrics
 * hook never breaks a read.
 */
export class Emitter<Events extends { [K in keyof Events]: (payload: never) => void }> {
  private readonly listeners = new Map<keyof Events, Set<(payload: never) => void>>();

  /** Subscribe; returns a function that unsubscribes. */
  on<K extends keyof Events>(event: K, listener: Events[K]): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  /** True when anyone listens, so callers can skip building payloads nobody reads. */
  has(event: keyof Events): boolean {
    return (this.listeners.get(event)?.size ?? 0) > 0;
  }

  emit<K extends keyof Events>(event: K, payload: Parameters<Events[K]>[0]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of set) {
      try {
        (listener as (p: typeof payload) => void)(payload);
      } catch {
        // Observability must never change routing; see class comment.
      }
    }
  }
}
