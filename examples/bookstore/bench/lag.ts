import type { OrderQueries } from '../src/databases/types.js';
import type { BenchAdapter } from './databases.js';

/**
 * Replication facts measured beside the workload with a separate adapter instance (its probes
 * are not counted as the measured router's): the replay lag a write really sees, and "wait until
 * the replicas have everything", both from the adapter's own probes, so one implementation works
 * for every database.
 */
export class ReplicationWatch<C> {
  constructor(
    private readonly adapter: BenchAdapter<C>,
    private readonly orders: OrderQueries<C>,
  ) {}

  /**
   * One sample: an autocommit insert on the primary (customer 0, outside every Bookstore
   * partition), then each replica probed back to back until it has applied it. Returns the ms
   * from the write's acknowledgement to the first probe that showed it, per replica (a probe
   * costs a round trip, so the resolution is about one probe). Gives up after `timeoutMs`.
   */
  async sampleLagMs(timeoutMs = 2000): Promise<number[]> {
    const { position } = await this.adapter.write(
      (connection) => this.orders.placeOrder(connection, 0, 'lag sample'),
      { transaction: false },
    );
    const acknowledged = performance.now();
    return Promise.all(
      this.adapter.replicas.map(async (id) => {
        const signal = AbortSignal.timeout(timeoutMs);
        for (;;) {
          const probe = await this.adapter.probe(id, { signal, primary: undefined });
          if (this.adapter.codec.compare(probe.applied, position) === 'covered') {
            return performance.now() - acknowledged;
          }
          if (performance.now() - acknowledged > timeoutMs) return Number.POSITIVE_INFINITY;
        }
      }),
    );
  }

  /** Sample every `everyMs` until `stop()`; the finite samples, ms. */
  sampleUntilStopped(everyMs = 200): { stop(): Promise<number[]> } {
    const samples: number[] = [];
    let running = true;
    const loop = (async () => {
      while (running) {
        try {
          for (const ms of await this.sampleLagMs()) if (Number.isFinite(ms)) samples.push(ms);
        } catch {
          // A failed sample is no sample.
        }
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    })();
    return {
      async stop() {
        running = false;
        await loop;
        return samples;
      },
    };
  }

  /** Resolve once every replica has applied what the primary has now; throws after `timeoutMs`. */
  async waitForReplicas(timeoutMs = 60_000): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    const target = await this.adapter.probePrimary({ signal });
    for (const id of this.adapter.replicas) {
      for (;;) {
        const probe = await this.adapter.probe(id, { signal, primary: target });
        if (this.adapter.codec.compare(probe.applied, target) === 'covered') break;
        if (signal.aborted) throw new Error(`replica ${id} did not catch up in ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }
}
