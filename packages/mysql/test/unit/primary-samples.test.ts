import { PrimarySamples } from '@tidemark/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  createMariadbCodec,
  createMysqlCodec,
  GtidSet,
  MariadbGtidPosition,
} from '../../src/index.js';

const UUID = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
const OTHER = '4e11fa47-71ca-11e1-9e33-c80aa9429562';
const upTo = (n: number) => GtidSet.parse(`${UUID}:1-${n}`);

describe('PrimarySamples', () => {
  it('has no estimate before the first sample', () => {
    expect(new PrimarySamples(createMysqlCodec()).lagSeconds(upTo(1), 0)).toBeUndefined();
  });

  it('is the age of the oldest primary position the replica lacks, 0 when it has them all', () => {
    const timeline = new PrimarySamples(createMysqlCodec());
    timeline.note(upTo(5), 1000);
    timeline.note(upTo(5), 2000); // not moved: keeps the first time
    timeline.note(upTo(8), 3000);
    timeline.note(upTo(9), 4000);
    expect(timeline.lagSeconds(upTo(9), 10_000)).toBe(0);
    expect(timeline.lagSeconds(upTo(8), 10_000)).toBe(6);
    expect(timeline.lagSeconds(upTo(6), 10_000)).toBe(7);
    expect(timeline.lagSeconds(upTo(2), 10_000)).toBe(9);
  });

  it('starts over after a failover (a position that does not extend the last one)', () => {
    const timeline = new PrimarySamples(createMysqlCodec());
    timeline.note(upTo(5), 1000);
    const newPrimary = GtidSet.parse(`${UUID}:1-4,${OTHER}:1`);
    timeline.note(newPrimary, 5000);
    expect(timeline.lagSeconds(upTo(4), 6000)).toBe(1);
  });

  it('stays bounded and keeps the oldest sample when thinning', () => {
    const timeline = new PrimarySamples(createMysqlCodec(), 8);
    for (let i = 1; i <= 100; i++) timeline.note(upTo(i), i * 1000);
    expect((timeline as unknown as { samples: unknown[] }).samples.length).toBeLessThanOrEqual(8);
    expect(timeline.lagSeconds(GtidSet.EMPTY, 200_000)).toBe(199);
    expect(timeline.lagSeconds(upTo(100), 200_000)).toBe(0);
  });

  it('works with MariaDB positions', () => {
    const timeline = new PrimarySamples(createMariadbCodec());
    timeline.note(MariadbGtidPosition.parse('0-1-10'), 1000);
    timeline.note(MariadbGtidPosition.parse('0-1-12'), 2000);
    expect(timeline.lagSeconds(MariadbGtidPosition.parse('0-1-11'), 2500)).toBe(0.5);
    expect(timeline.lagSeconds(MariadbGtidPosition.parse('0-1-12'), 2500)).toBe(0);
  });
});
