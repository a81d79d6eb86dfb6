/**
 * Micro-benchmark of the read path's CPU cost: `pnpm --filter @tidemark/core bench`.
 *
 * Prints ns per routing decision (planRead over 8 replicas, covered and wait cases; the full
 * Router.readDetailed path over a synchronous in-memory adapter) and ns per token encode/decode,
 * unsigned and signed. The target is a median routing decision under 1 µs with 8 replicas; the
 * `ratio` column is median / target (under 1 meets it). Wall time is never asserted: machines
 * are noisy, so this reports and the reader judges.
 */

import { planRead } from '../src/adapter-kit/index.js';
import { balanced, leastLag, Router, Session, TokenCodec } from '../src/index.js';
import {
  InMemoryAdapter,
  type MemoryConnection,
  replicaStates,
  sequenceCodec,
} from './in-memory-cluster.js';
import { consumed, measureAsync, measureSync, report } from './measure.js';

const TARGET_NS = 1000;
const REPLICAS = 8;
/** Replica positions around 1000: some ahead of the session position used below, some behind. */
const APPLIED = [990, 1004, 995, 1010, 980, 1001, 999, 1007];
const HEALTH = { maxSampleAgeMs: 1000, maxLagSeconds: 10 };

function benchPlanRead(): void {
  const now = performance.now();
  const states = replicaStates(APPLIED, now);
  const base = {
    states,
    codec: sequenceCodec,
    now,
    health: HEALTH,
    selection: leastLag,
    affinityKey: undefined,
  };
  const covered = { ...base, required: 1000 };
  // The router's default: power of two choices over the router's in-flight counts.
  const inFlight = new Map(states.map((state, i) => [state.id, i % 3]));
  const balancedCovered = {
    ...covered,
    selection: balanced(),
    load: { inFlight: (id: string) => inFlight.get(id) ?? 0 },
  };
  const wait = { ...base, required: 2000 };
  const noToken = { ...base, required: undefined };
  if (planRead(covered).kind !== 'replica' || planRead(wait).kind !== 'wait') {
    throw new Error('benchmark fixtures no longer produce the covered and wait plans');
  }
  console.log(
    report(
      `planRead replicas=${REPLICAS} covered`,
      measureSync(() => planRead(covered)),
      TARGET_NS,
    ),
  );
  console.log(
    report(
      `planRead replicas=${REPLICAS} covered balanced`,
      measureSync(() => planRead(balancedCovered)),
      TARGET_NS,
    ),
  );
  console.log(
    report(
      `planRead replicas=${REPLICAS} wait`,
      measureSync(() => planRead(wait)),
      TARGET_NS,
    ),
  );
  console.log(
    report(
      `planRead replicas=${REPLICAS} no-token`,
      measureSync(() => planRead(noToken)),
      TARGET_NS,
    ),
  );
}

async function benchRouter(): Promise<void> {
  const adapter = new InMemoryAdapter(APPLIED, 1010);
  const router = new Router<number, MemoryConnection>({
    adapter,
    // Probe once (ready) and never again during the run; samples stay fresh for 10 minutes.
    monitorOptions: { intervalMs: 600_000 },
    health: { maxSampleAgeMs: 600_000 },
  });
  await router.ready();
  const session = new Session();
  session.raise(router.cluster, sequenceCodec, 1000);
  const read = async (connection: MemoryConnection) => connection.applied;
  const first = await router.readDetailed(session, read);
  if (first.decision.reason !== 'replica-covered') {
    throw new Error(`expected a covered read, got ${first.decision.reason}`);
  }
  const measured = await measureAsync(() => router.readDetailed(session, read));
  console.log(
    report(`Router.readDetailed replicas=${REPLICAS} covered in-memory`, measured, TARGET_NS),
  );
  await router.close();
}

function benchTokens(): void {
  const data = {
    positions: { default: '1.16B374D8', orders: '3E11FA47-71CA-11E1-9E33-C80AA9429562.1-77' },
  };
  const unsigned = new TokenCodec();
  const signed = new TokenCodec({
    keys: [{ id: 'k1', secret: 'benchmark-secret-of-at-least-32-bytes!' }],
  });
  const unsignedText = unsigned.encode(data);
  const signedText = signed.encode(data);
  console.log(
    report(
      'token encode unsigned clusters=2',
      measureSync(() => unsigned.encode(data)),
    ),
  );
  console.log(
    report(
      'token decode unsigned clusters=2',
      measureSync(() => unsigned.decode(unsignedText)),
    ),
  );
  console.log(
    report(
      'token encode signed clusters=2',
      measureSync(() => signed.encode(data)),
    ),
  );
  console.log(
    report(
      'token decode signed clusters=2',
      measureSync(() => signed.decode(signedText)),
    ),
  );
}

async function main(): Promise<void> {
  console.log(
    `bench env node=${process.version} platform=${process.platform}-${process.arch} (medians over batched samples; p99 shows jitter)`,
  );
  benchPlanRead();
  await benchRouter();
  benchTokens();
  if (consumed() === Symbol.for('never')) console.log('unreachable');
}

await main();
