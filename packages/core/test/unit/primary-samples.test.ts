import { describe, expect, it } from 'vitest';
import { type PositionCodec, PrimarySamples } from '../../src/adapter-kit/index.js';
import { type CounterPosition, counterCodec } from '../support/counter-codec.js';

const at = (seq: number, history = 1): CounterPosition => ({ history, seq });

/** The counter codec, counting its compares: what a probe answer costs the monitor. */
function countingCodec(forks?: ReadonlyMap<number, number>) {
  const codec = counterCodec(forks);
  const counted = {
    compares: 0,
    codec: {
      ...codec,
      compare(applied, required) {
        counted.compares++;
        return codec.compare(applied, required);
      },
    } satisfies PositionCodec<CounterPosition>,
  };
  return counted;
}

/** Samples at seq 10, 20, ..., 10 * count, first seen at t = seq. */
function filled(samples: PrimarySamples<CounterPosition>, count: number): void {
  for (let i = 1; i <= count; i++) samples.note(at(10 * i), 10 * i);
}

/** What behindSince answers by definition: the first sample `applied` does not cover. */
function scan(count: number, applied: number): number | undefined {
  for (let i = 1; i <= count; i++) if (applied < 10 * i) return 10 * i;
  return undefined;
}

describe('PrimarySamples.behindSince', () => {
  it('gives the first-seen time of the oldest sample the replica lacks, for every position', () => {
    const { codec } = countingCodec();
    for (const count of [1, 2, 3, 7, 64]) {
      const samples = new PrimarySamples(codec, 64);
      filled(samples, count);
      for (let applied = 0; applied <= 10 * count + 10; applied++) {
        expect(samples.behindSince(at(applied))).toBe(scan(count, applied));
      }
    }
  });

  it('is undefined before the first sample', () => {
    expect(new PrimarySamples(counterCodec()).behindSince(at(5))).toBeUndefined();
  });

  it('costs one compare for a caught-up replica and a bisection otherwise, not a scan', () => {
    const counted = countingCodec();
    const samples = new PrimarySamples(counted.codec, 64);
    filled(samples, 64);
    counted.compares = 0;
    expect(samples.behindSince(at(640))).toBeUndefined();
    expect(counted.compares).toBe(1);
    // Behind every sample but the last one: a linear scan would compare 64 times.
    counted.compares = 0;
    expect(samples.behindSince(at(635))).toBe(640);
    expect(counted.compares).toBeLessThanOrEqual(8);
    counted.compares = 0;
    expect(samples.behindSince(at(0))).toBe(10);
    expect(counted.compares).toBeLessThanOrEqual(8);
  });

  it('treats a replica on another history as lacking every sample past the fork', () => {
    // History 2 forked from history 1 at seq 25: a replica at 2.100 shares 1.10 and 1.20 only.
    const { codec } = countingCodec(new Map([[2, 25]]));
    const samples = new PrimarySamples(codec, 64);
    filled(samples, 6);
    expect(samples.behindSince(at(100, 2))).toBe(30);
  });
});
