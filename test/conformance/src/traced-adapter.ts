import type {
  Adapter,
  PositionCodec,
  ProbeContext,
  ProbeResult,
  ReadContext,
  ReadOutcome,
  WriteOptions,
  WriteOutcome,
} from '@tidemark/core';

/** One read the router handed to the adapter. */
export interface ReadTrace {
  readonly target: string;
  readonly ok: boolean;
  readonly error?: unknown;
}

/** An adapter that records where every read went, so scenarios can verify routing claims. */
export interface TracedAdapter<P, C> {
  readonly adapter: Adapter<P, C>;
  readonly reads: ReadTrace[];
}

/**
 * Delegates everything. The optional members are getters, not copies: an adapter may offer
 * `waitFor` only once it knows the server version (the pg adapter learns it from the first
 * probe), and the router asks for it on every wait.
 */
class TracingAdapter<P, C> {
  constructor(
    private readonly inner: Adapter<P, C>,
    readonly reads: ReadTrace[],
  ) {}

  get codec(): PositionCodec<P> {
    return this.inner.codec;
  }

  get replicas(): readonly string[] {
    return this.inner.replicas;
  }

  get waitFor(): Adapter<P, C>['waitFor'] {
    const inner = this.inner;
    const wait = inner.waitFor;
    if (!wait) return undefined;
    return (replicaId, position, timeoutMs, context) =>
      wait.call(inner, replicaId, position, timeoutMs, context);
  }

  get isRetryable(): Adapter<P, C>['isRetryable'] {
    const inner = this.inner;
    const retryable = inner.isRetryable;
    if (!retryable) return undefined;
    return (error) => retryable.call(inner, error);
  }

  get classifyAgainstPrimary(): Adapter<P, C>['classifyAgainstPrimary'] {
    const inner = this.inner;
    const classify = inner.classifyAgainstPrimary;
    if (!classify) return undefined;
    return (primary, required) => classify.call(inner, primary, required);
  }

  async read<T>(
    target: string,
    fn: (connection: C) => Promise<T>,
    context: ReadContext<P>,
  ): Promise<ReadOutcome<T, P>> {
    try {
      const outcome = await this.inner.read(target, fn, context);
      this.reads.push({ target, ok: true });
      return outcome;
    } catch (error) {
      this.reads.push({ target, ok: false, error });
      throw error;
    }
  }

  write<T>(fn: (connection: C) => Promise<T>, options: WriteOptions): Promise<WriteOutcome<T, P>> {
    return this.inner.write(fn, options);
  }

  probe(replicaId: string, context: ProbeContext<P>): Promise<ProbeResult<P>> {
    return this.inner.probe(replicaId, context);
  }

  probePrimary(context: { signal: AbortSignal }): Promise<P> {
    return this.inner.probePrimary(context);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Wrap an adapter without changing its behaviour. The router reports its decision only for reads
 * that succeed; the trace also sees the ones that fail (a read-only violation on the primary, a
 * read on a killed replica).
 */
export function traceAdapter<P, C>(inner: Adapter<P, C>): TracedAdapter<P, C> {
  const reads: ReadTrace[] = [];
  // The cast only bridges the getters: with exactOptionalPropertyTypes, core's `waitFor?:` does
  // not admit a getter that may return undefined, though the router handles exactly that.
  return { adapter: new TracingAdapter(inner, reads) as unknown as Adapter<P, C>, reads };
}
