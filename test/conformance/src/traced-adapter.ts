import type { WriteOptions } from '@tidemark/core';
import type {
  Adapter,
  PositionCodec,
  ProbeContext,
  ProbeResult,
  ReadContext,
  ReadOutcome,
  WriteOutcome,
} from '@tidemark/core/adapter';

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
 * Delegates everything. Adapters expose their optional members from construction on (`waitFor`
 * answers `unsupported` where the server cannot wait), so they are bound once here.
 */
class TracingAdapter<P, C> implements Adapter<P, C> {
  readonly codec: PositionCodec<P>;
  readonly replicas: readonly string[];
  readonly waitFor: Adapter<P, C>['waitFor'];
  readonly isRetryable: Adapter<P, C>['isRetryable'];
  readonly classifyAgainstPrimary: Adapter<P, C>['classifyAgainstPrimary'];
  readonly coveredNeedsVerdict: boolean | undefined;

  constructor(
    private readonly inner: Adapter<P, C>,
    readonly reads: ReadTrace[],
  ) {
    this.codec = inner.codec;
    this.replicas = inner.replicas;
    this.waitFor = inner.waitFor?.bind(inner);
    this.isRetryable = inner.isRetryable?.bind(inner);
    this.classifyAgainstPrimary = inner.classifyAgainstPrimary?.bind(inner);
    this.coveredNeedsVerdict = inner.coveredNeedsVerdict;
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
  return { adapter: new TracingAdapter(inner, reads), reads };
}
