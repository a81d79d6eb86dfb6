import { ErrorCode, Session, TokenCodec, TokenError } from '@tidemark/core';
import { describe, expect, it } from 'vitest';
import { classifyAgainstPrimary, createMysqlCodec, GtidSet } from '../../src/index.js';

/** The old primary, whose last writes were lost in the failover. */
const OLD = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
/** The current primary. */
const NEW = '4e11fa47-71ca-11e1-9e33-c80aa9429562';
const set = (text: string) => GtidSet.parse(text);

describe('createMysqlCodec', () => {
  const codec = createMysqlCodec();

  it('compares by subset: covered when the replica has every required transaction', () => {
    const applied = set(`${OLD}:1-100,${NEW}:1-10`);
    expect(codec.kind).toBe('mysql');
    expect(codec.compare(applied, set(`${OLD}:1-100`))).toBe('covered');
    expect(codec.compare(applied, set(`${OLD}:50,${NEW}:10`))).toBe('covered');
    expect(codec.compare(applied, GtidSet.EMPTY)).toBe('covered');
    expect(codec.compare(applied, set(`${NEW}:11`))).toBe('behind');
    // A gap in the replica counts even though it has later transactions.
    expect(codec.compare(set(`${OLD}:1-4:6-100`), set(`${OLD}:5`))).toBe('behind');
    expect(codec.compare(GtidSet.EMPTY, set(`${NEW}:1`))).toBe('behind');
  });

  it('never says other-history on its own', () => {
    expect(codec.compare(set(`${NEW}:1-10`), set(`${OLD}:1`))).toBe('behind');
  });

  it('merges by union', () => {
    expect(codec.merge(set(`${OLD}:1-5`), set(`${OLD}:6-7,${NEW}:1`)).format()).toBe(
      `${OLD}:1-7,\n${NEW}:1`,
    );
  });

  it('encodes and strictly decodes tokens', () => {
    const position = set(`${OLD}:1-100,${NEW}:1-10`);
    expect(codec.decode(codec.encode(position)).equals(position)).toBe(true);
    try {
      codec.decode(`${OLD}:1`);
      expect.unreachable('server text is not token text');
    } catch (error) {
      expect(error).toBeInstanceOf(TokenError);
      expect((error as TokenError).code).toBe(ErrorCode.PositionInvalid);
    }
  });

  it('decodes a token text once: the same frozen set for every token that carries it', () => {
    const text = codec.encode(set(`${OLD}:1-100,${NEW}:1-10`));
    const first = codec.decode(text);
    expect(codec.decode(text)).toBe(first);
    expect(Object.isFrozen(first.entries)).toBe(true);
    codec.merge(first, set(`${NEW}:11-20`));
    expect(codec.decode(text).equals(set(`${OLD}:1-100,${NEW}:1-10`))).toBe(true);
    for (let i = 0; i < 2; i++) expect(() => codec.decode(`${OLD}:1`)).toThrow(TokenError);
  });

  it('works inside a core Session and a signed TokenCodec', () => {
    const tokens = new TokenCodec({
      keys: [{ id: 'k1', secret: 'a-test-secret-that-is-32-bytes-long!' }],
    });
    const session = new Session();
    session.raise('orders', codec, set(`${NEW}:1-3`));
    session.raise('orders', codec, set(`${NEW}:5`));
    session.raise('orders', codec, set(`${NEW}:2`)); // older: changes nothing
    const token = tokens.encode(session.toTokenData());
    const restored = Session.fromToken(tokens.decode(token));
    expect(restored.position('orders', codec)?.format()).toBe(`${NEW}:1-3:5`);
    console.info(`signed core token with one MySQL cluster: ${token.length} characters`);
  });
});

describe('classifyAgainstPrimary', () => {
  // The new primary received the old one's transactions 1-100 before the failover; 101-105 were
  // acknowledged to clients by the old primary and lost.
  const primary = set(`${OLD}:1-100,${NEW}:1-10`);

  it('is ok when the primary has executed everything required', () => {
    expect(classifyAgainstPrimary(primary, set(`${OLD}:1-90,${NEW}:1-5`), NEW)).toBe('ok');
    expect(classifyAgainstPrimary(primary, GtidSet.EMPTY, NEW)).toBe('ok');
    expect(classifyAgainstPrimary(GtidSet.EMPTY, GtidSet.EMPTY, NEW)).toBe('ok');
  });

  it('is other-history when another server’s transactions are missing', () => {
    expect(classifyAgainstPrimary(primary, set(`${OLD}:1-105`), NEW)).toBe('other-history');
    expect(classifyAgainstPrimary(primary, set(`${OLD}:103,${NEW}:2`), NEW)).toBe('other-history');
    const stranger = '00000000-0000-0000-0000-0000000000aa';
    expect(classifyAgainstPrimary(primary, set(`${stranger}:1`), NEW)).toBe('other-history');
  });

  it('is impossible when the primary’s own transactions are missing', () => {
    expect(classifyAgainstPrimary(primary, set(`${NEW}:1-20`), NEW)).toBe('impossible');
    expect(classifyAgainstPrimary(primary, set(`${NEW}:t:1`), NEW)).toBe('impossible');
  });

  it('is other-history when a lost transaction sits beside own ones the sample lacks', () => {
    // A replica that kept the old primary's lost 101-105 and follows the new primary, probed
    // after the primary's sample was read: it also holds NEW:11-12, newer than that sample.
    const replica = set(`${OLD}:1-105,${NEW}:1-12`);
    expect(classifyAgainstPrimary(primary, replica, NEW)).toBe('other-history');
    expect(classifyAgainstPrimary(primary, set(`${OLD}:101,${NEW}:11`), NEW)).toBe('other-history');
  });

  it('accepts the primary UUID in any case and rejects non-UUIDs', () => {
    expect(classifyAgainstPrimary(primary, set(`${NEW}:11`), NEW.toUpperCase())).toBe('impossible');
    expect(() => classifyAgainstPrimary(primary, set(`${NEW}:11`), 'primary')).toThrow(TokenError);
  });
});

describe('createMysqlCodec().compact', () => {
  const codec = createMysqlCodec();
  const compact = codec.compact!;

  it('joins a session’s own writes into one interval per source when the primary has the gaps', () => {
    const own = set(`${NEW}:19,${NEW}:23,${NEW}:42`);
    expect(compact(own, set(`${NEW}:1-50`)).format()).toBe(`${NEW}:19-42`);
    // Each source on its own: the span of OLD is 5-7, and NEW's transactions are not widened.
    expect(
      compact(set(`${OLD}:5,${OLD}:7,${NEW}:3`), set(`${OLD}:1-100,${NEW}:1-10`)).format(),
    ).toBe(`${OLD}:5-7,\n${NEW}:3`);
  });

  it('adds only transactions the primary has, and none outside the position’s span', () => {
    // The primary's sample lacks 31-41: they stay a gap rather than being required.
    expect(compact(set(`${NEW}:19,${NEW}:42`), set(`${NEW}:1-30`)).format()).toBe(
      `${NEW}:19-30:42`,
    );
    expect(compact(set(`${NEW}:5,${NEW}:9`), set(`${NEW}:1-6:8-10`)).format()).toBe(
      `${NEW}:5-6:8-9`,
    );
    // A source the position does not name is never added.
    expect(compact(set(`${NEW}:4`), set(`${OLD}:1-100,${NEW}:1-10`)).format()).toBe(`${NEW}:4`);
    expect(compact(GtidSet.EMPTY, set(`${NEW}:1-10`)).isEmpty).toBe(true);
  });

  it('holds on random sets: covers the position, adds only the primary’s transactions inside its span', () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const randomSet = (uuids: string[], size: number) =>
      GtidSet.fromEntries(
        uuids.map((uuid) => ({
          uuid,
          tag: '',
          intervals: Array.from({ length: 1 + next(size) }, () => {
            const start = BigInt(1 + next(200));
            return { start, end: start + BigInt(next(4)) };
          }),
        })),
      );
    for (let i = 0; i < 500; i++) {
      const position = randomSet([NEW, OLD].slice(0, 1 + next(2)), 6);
      const primary = randomSet([NEW, OLD], 12);
      const result = compact(position, primary);
      expect(position.isSubsetOf(result)).toBe(true);
      expect(result.isSubsetOf(position.union(primary))).toBe(true);
      for (const entry of result.entries) {
        const own = position.entries.find((e) => e.uuid === entry.uuid)!;
        expect(entry.intervals[0]!.start).toBe(own.intervals[0]!.start);
        expect(entry.intervals.at(-1)!.end).toBe(own.intervals.at(-1)!.end);
      }
    }
  });
});
