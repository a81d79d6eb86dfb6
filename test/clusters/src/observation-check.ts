/**
 * The adapters' shared check of `Adapter.observe` (a replica's position alone) on a real cluster:
 * once the replica applied a write, the observation covers it and equals what the full probe
 * says; the control pauses replay, writes again, and the observation must not cover that write.
 * Typed structurally so that this harness needs no dependency on core or on an adapter.
 */
import type { Cluster } from './types.js';
import { eventually, noSignal } from './wait-for.js';

/** The parts of a Tidemark adapter the check uses. */
export interface ObservingAdapter<P> {
  readonly codec: { compare(held: P, required: P): string };
  observe(replicaId: string, context: { signal: AbortSignal }): Promise<P>;
  probe(
    replicaId: string,
    context: { signal: AbortSignal; primary: undefined },
  ): Promise<{ readonly applied: P }>;
}

export interface ObservationCheckOptions<P> {
  readonly adapter: ObservingAdapter<P>;
  readonly cluster: Pick<Cluster, 'pauseReplay' | 'resumeReplay'>;
  readonly replica: string;
  /** One write on the primary through the adapter; its captured position. */
  readonly write: () => Promise<P>;
  /** Resolves once every replica applied everything the primary has. */
  readonly caughtUp: () => Promise<void>;
}

/** Codec relations (`compare(a, b)`) for the test to assert on. */
export interface ObservationCheck<P> {
  /** The observation once the replica applied the first write (it covers that write). */
  readonly observed: P;
  /** `compare(probe, observation)` and the reverse: both `covered` when they are equal. */
  readonly probeVsObserved: string;
  readonly observedVsProbe: string;
  /** The control: `compare(observation with replay paused, a write made meanwhile)`. */
  readonly pausedVsUnseen: string;
}

export async function checkObservation<P>(
  options: ObservationCheckOptions<P>,
): Promise<ObservationCheck<P>> {
  const { adapter, cluster, replica } = options;
  const compare = (a: P, b: P) => adapter.codec.compare(a, b);
  const written = await options.write();
  await options.caughtUp();
  const observed = await eventually('the replica to apply the write', async () => {
    const seen = await adapter.observe(replica, { signal: noSignal() });
    return compare(seen, written) === 'covered' ? seen : undefined;
  });
  const { applied } = await adapter.probe(replica, { signal: noSignal(), primary: undefined });
  await cluster.pauseReplay(replica);
  let pausedVsUnseen: string;
  try {
    const unseen = await options.write();
    pausedVsUnseen = compare(await adapter.observe(replica, { signal: noSignal() }), unseen);
  } finally {
    await cluster.resumeReplay(replica);
  }
  await options.caughtUp();
  return {
    observed,
    probeVsObserved: compare(applied, observed),
    observedVsProbe: compare(observed, applied),
    pausedVsUnseen,
  };
}
