import type { ReplicaViewChannel } from '../../src/index.js';

/**
 * A simulator of the store behind a shared replica view (a lease with expiry and a broadcast),
 * in one process, on `Date.now()` (faked in timer tests). Each instance gets its own
 * {@link MemoryViewChannel} over one store, so a test can cut one instance off (its calls hang,
 * as over a dead network) or fail the whole store. The Redis channel is tested against a real
 * Redis server in @tidemark/redis.
 */
export class MemoryViewStore {
  readonly leases = new Map<string, { owner: string; expiresAt: number }>();
  readonly listeners = new Map<
    string,
    Set<{ channel: MemoryViewChannel; fn: (m: string) => void }>
  >();
  /** Every call rejects while true (the store is down). */
  down = false;
  published = 0;

  channel(): MemoryViewChannel {
    return new MemoryViewChannel(this);
  }

  holder(scope: string): string | undefined {
    const lease = this.leases.get(scope);
    return lease && lease.expiresAt > Date.now() ? lease.owner : undefined;
  }

  /** Deliver `message` to every listener of `scope` (a test's forged message, for example). */
  deliver(scope: string, message: string): void {
    for (const { channel, fn } of this.listeners.get(scope) ?? []) {
      if (!channel.cut) fn(message);
    }
  }
}

export class MemoryViewChannel implements ReplicaViewChannel {
  /** Cut off from the store: calls never answer and nothing is delivered. */
  cut = false;

  constructor(private readonly store: MemoryViewStore) {}

  async lead(scope: string, owner: string, ttlMs: number): Promise<boolean> {
    await this.reach();
    const holder = this.store.holder(scope);
    if (holder !== undefined && holder !== owner) return false;
    this.store.leases.set(scope, { owner, expiresAt: Date.now() + ttlMs });
    return true;
  }

  async resign(scope: string, owner: string): Promise<void> {
    await this.reach();
    if (this.store.holder(scope) === owner) this.store.leases.delete(scope);
  }

  async publish(scope: string, message: string): Promise<void> {
    await this.reach();
    this.store.published++;
    this.store.deliver(scope, message);
  }

  async subscribe(scope: string, fn: (message: string) => void): Promise<() => Promise<void>> {
    await this.reach();
    const entry = { channel: this, fn };
    let set = this.store.listeners.get(scope);
    if (!set) {
      set = new Set();
      this.store.listeners.set(scope, set);
    }
    set.add(entry);
    return async () => {
      set.delete(entry);
    };
  }

  private reach(): Promise<void> {
    if (this.cut) return new Promise(() => undefined);
    if (this.store.down) return Promise.reject(new Error('store unreachable (simulated)'));
    return Promise.resolve();
  }
}
