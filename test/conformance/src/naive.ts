import type { Adapter } from '@tidemark/core/adapter';

/** Where a naive read went, with its value. */
export interface NaiveRead<T> {
  readonly value: T;
  readonly target: string;
}

/**
 * The control: what an application does without Tidemark. Writes go to the primary, reads go
 * round-robin over the replicas, with no token, no wait, no fallback and no retry. Every
 * scenario runs it next to the real router; where an anomaly exists, this router must show it,
 * or the scenario could not have failed.
 */
export class NaiveRouter<P, C> {
  private next = 0;

  constructor(private readonly adapter: Adapter<P, C>) {
    if (adapter.replicas.length === 0) {
      throw new Error('NaiveRouter needs at least one replica to read from.');
    }
  }

  async write<T>(fn: (connection: C) => Promise<T>): Promise<T> {
    return (await this.adapter.write(fn, {})).value;
  }

  /** Read on the next replica in turn. Errors reach the caller unchanged. */
  async read<T>(fn: (connection: C) => Promise<T>): Promise<NaiveRead<T>> {
    const replicas = this.adapter.replicas;
    const target = replicas[this.next % replicas.length]!;
    this.next++;
    const outcome = await this.adapter.read(target, fn, {});
    return { value: outcome.value, target };
  }

  /** Close the adapter this router owns. */
  close(): Promise<void> {
    return this.adapter.close();
  }
}
