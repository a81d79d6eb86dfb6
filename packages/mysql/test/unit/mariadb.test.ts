import { ErrorCode, TokenError } from '@tidemark/core';
import { POSITION_TEXT_PATTERN } from '@tidemark/core/adapter';
import { describe, expect, it } from 'vitest';
import {
  compareMariadbPositions,
  createMariadbCodec,
  decodeMariadbPositionToken,
  encodeMariadbPositionToken,
  MariadbGtidPosition,
  mergeMariadbPositions,
} from '../../src/index.js';
import { parseBinlogState } from '../../src/mariadb-binlog-state.js';
import { classifyMariadbAgainstPrimary } from '../../src/mariadb-classify.js';
import { createMariadbFlavour } from '../../src/mariadb-flavour.js';

const pos = (text: string) => MariadbGtidPosition.parse(text);

function rejects(run: () => unknown): TokenError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(TokenError);
  expect((caught as TokenError).code).toBe(ErrorCode.PositionInvalid);
  return caught as TokenError;
}

describe('MariadbGtidPosition.parse', () => {
  it('reads the server text and prints it sorted by domain', () => {
    const position = pos('1-2-5,0-1-9');
    expect(position.gtids).toEqual([
      { domain: 0, server: 1, seq: 9n },
      { domain: 1, server: 2, seq: 5n },
    ]);
    expect(position.format()).toBe('0-1-9,1-2-5');
    expect(position.domain(1)).toEqual({ domain: 1, server: 2, seq: 5n });
    expect(position.domain(7)).toBeUndefined();
  });

  it('reads a single GTID (the session-tracked last_gtid) and blank text', () => {
    expect(pos('0-1-9').format()).toBe('0-1-9');
    expect(pos('')).toBe(MariadbGtidPosition.EMPTY);
    expect(pos(' \n').isEmpty).toBe(true);
    expect(pos(' 0-1-9,1-2-5\n').format()).toBe('0-1-9,1-2-5');
  });

  it('keeps the full range of each field', () => {
    const text = '4294967295-4294967295-18446744073709551615';
    expect(pos(text).format()).toBe(text);
    expect(pos(text).gtids[0]?.seq).toBe(2n ** 64n - 1n);
    expect(pos('0-0-0').format()).toBe('0-0-0');
  });

  it('reads what MariaDB 10.11.19 printed, and refuses its gtid_binlog_state', () => {
    // Measured on a scratch server after writes in domains 0, 1 and 3 from server ids 7 and 9.
    expect(pos('0-9-4,1-9-1,3-7-1').format()).toBe('0-9-4,1-9-1,3-7-1'); // @@gtid_binlog_pos
    expect(pos('0-9-4').format()).toBe('0-9-4'); // @@last_gtid
    const error = rejects(() => pos('0-7-3,0-9-4,1-9-1,3-7-1')); // @@gtid_binlog_state
    expect(error.message).toMatch(/gtid_binlog_state/);
  });

  it.each([
    ['two fields', '0-1'],
    ['four fields', '0-1-9-1'],
    ['a leading zero in the domain', '00-1-9'],
    ['a leading zero in the server id', '0-01-9'],
    ['a leading zero in the sequence', '0-1-09'],
    ['a sign', '-1-1-1'],
    ['a domain above 2^32-1', '4294967296-1-1'],
    ['a server id above 2^32-1', '0-4294967296-1'],
    ['a sequence above 2^64-1', '0-1-18446744073709551616'],
    ['an empty entry', '0-1-9,,1-2-3'],
    ['only a comma', ' , '],
    ['a trailing comma', '0-1-9,'],
    ['letters', 'a-b-c'],
    ['a semicolon', '0-1-9;1-2-3'],
    ['whitespace inside a GTID', '0 -1-9'],
    // MariaDB 10.11 itself refuses '0-9-4 ,1-9-1' (measured); it never prints whitespace.
    ['whitespace after a comma', '0-1-9, 1-2-5'],
    ['whitespace before a comma', '0-1-9 ,1-2-5'],
    ['a MySQL GTID', '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5'],
    ['a token', '0-1-9.1-2-5'],
  ])('rejects %s', (_what, text) => {
    rejects(() => pos(text));
  });

  it('rejects non-strings and oversized text', () => {
    rejects(() => pos(undefined as unknown as string));
    rejects(() => pos(7 as unknown as string));
    rejects(() => MariadbGtidPosition.parse('0-1-9', { maxLength: 4 }));
    expect(MariadbGtidPosition.parse('0-1-9', { maxLength: 5 }).format()).toBe('0-1-9');
    rejects(() => pos(`${'0-1-9,'.repeat(20_000)}0-1-9`));
  });

  it('builds from GTIDs and rejects bad ones', () => {
    expect(
      MariadbGtidPosition.fromGtids([
        { domain: 2, server: 1, seq: 3 },
        { domain: 0, server: 1, seq: 4n },
      ]).format(),
    ).toBe('0-1-4,2-1-3');
    rejects(() => MariadbGtidPosition.fromGtids([{ domain: -1, server: 1, seq: 1 }]));
    rejects(() => MariadbGtidPosition.fromGtids([{ domain: 0.5, server: 1, seq: 1 }]));
    rejects(() => MariadbGtidPosition.fromGtids([{ domain: 0, server: 1, seq: -1n }]));
    rejects(() => MariadbGtidPosition.fromGtids([{ domain: 0, server: 1, seq: 2 ** 53 }]));
  });

  it('is immutable and serialises to JSON as server text', () => {
    const position = pos('0-1-9');
    expect(Object.isFrozen(position.gtids)).toBe(true);
    expect(Object.isFrozen(position.gtids[0])).toBe(true);
    expect(JSON.stringify([position])).toBe('["0-1-9"]');
  });
});

describe('compareMariadbPositions', () => {
  it('is covered when every required domain has reached the required sequence number', () => {
    expect(compareMariadbPositions(pos('0-1-9,1-2-5'), pos('0-1-9'))).toBe('covered');
    expect(compareMariadbPositions(pos('0-1-10'), pos('0-1-9'))).toBe('covered');
    // A higher number from another server is later in the same domain's order.
    expect(compareMariadbPositions(pos('0-2-10'), pos('0-1-9'))).toBe('covered');
    expect(compareMariadbPositions(pos('0-1-9'), MariadbGtidPosition.EMPTY)).toBe('covered');
  });

  it('is behind on a lower number or a missing domain', () => {
    expect(compareMariadbPositions(pos('0-1-8'), pos('0-1-9'))).toBe('behind');
    expect(compareMariadbPositions(pos('0-1-100'), pos('0-1-9,1-2-1'))).toBe('behind');
    expect(compareMariadbPositions(MariadbGtidPosition.EMPTY, pos('0-1-1'))).toBe('behind');
  });

  it('in strict mode, the same number from another server is another history', () => {
    expect(compareMariadbPositions(pos('0-2-9'), pos('0-1-9'))).toBe('other-history');
    // Permanent beats waiting: another domain being behind does not hide it.
    expect(compareMariadbPositions(pos('0-2-9,1-1-1'), pos('0-1-9,1-1-5'))).toBe('other-history');
    expect(compareMariadbPositions(pos('0-2-9'), pos('0-1-9'), { strictMode: false })).toBe(
      'covered',
    );
  });
});

describe('mergeMariadbPositions', () => {
  it('takes every domain at its higher sequence number, with its server id', () => {
    expect(mergeMariadbPositions(pos('0-1-9,2-1-4'), pos('0-2-12,1-3-1')).format()).toBe(
      '0-2-12,1-3-1,2-1-4',
    );
    expect(mergeMariadbPositions(pos('0-1-9'), MariadbGtidPosition.EMPTY).format()).toBe('0-1-9');
  });

  it('breaks a tie between servers the same way in both orders', () => {
    expect(mergeMariadbPositions(pos('0-1-9'), pos('0-2-9')).format()).toBe('0-2-9');
    expect(mergeMariadbPositions(pos('0-2-9'), pos('0-1-9')).format()).toBe('0-2-9');
  });
});

describe('MariaDB token form', () => {
  it('writes each GTID in base 36, joined by dots', () => {
    expect(encodeMariadbPositionToken(pos('0-1-9,1-2-5'))).toBe('0-1-9.1-2-5');
    expect(encodeMariadbPositionToken(pos('0-1-1000000'))).toBe(`0-1-${(1_000_000).toString(36)}`);
    expect(encodeMariadbPositionToken(MariadbGtidPosition.EMPTY)).toBe('0');
    const widest = pos('4294967295-4294967295-18446744073709551615');
    expect(encodeMariadbPositionToken(widest)).toBe(
      `${(2 ** 32 - 1).toString(36)}-${(2 ** 32 - 1).toString(36)}-${(2n ** 64n - 1n).toString(36)}`,
    );
    expect(encodeMariadbPositionToken(widest)).toMatch(POSITION_TEXT_PATTERN);
    console.info('MariaDB token lengths (characters):', {
      oneDomainMillion: encodeMariadbPositionToken(pos('0-1-1000000')).length,
      twoDomains: encodeMariadbPositionToken(pos('0-1-1000000,1-2-5000')).length,
      widest: encodeMariadbPositionToken(widest).length,
    });
  });

  it('round trips and decodes the empty position', () => {
    const position = pos('0-1-9,7-300-123456789012');
    expect(decodeMariadbPositionToken(encodeMariadbPositionToken(position)).format()).toBe(
      position.format(),
    );
    expect(decodeMariadbPositionToken('0')).toBe(MariadbGtidPosition.EMPTY);
  });

  it.each([
    ['empty text', ''],
    ['a non-string', 9],
    ['server text', '0-1-9,1-2-5'],
    ['unsorted domains', '1-2-5.0-1-9'],
    ['a repeated domain', '0-1-9.0-2-a'],
    ['a leading zero', '00-1-9'],
    ['a leading zero in seq', '0-1-09'],
    ['uppercase', '0-1-A'],
    ['a domain of 2^32', `${(2 ** 32).toString(36)}-1-1`],
    ['a server id of 2^32', `0-${(2 ** 32).toString(36)}-1`],
    ['a seq of 2^64', `0-1-${(2n ** 64n).toString(36)}`],
    ['the empty position plus more', '0.0-1-9'],
    ['a trailing dot', '0-1-9.'],
    ['two fields', '0-1'],
    ['a MySQL token', 'PhH6R3HKEeGeM8gKqUKVYg1-9ix'],
    ['an underscore', '0-1-9_'],
    ['text over the length limit', `0-1-1${'.1-1-1'.repeat(3000)}`],
  ])('rejects %s', (_what, text) => {
    rejects(() => decodeMariadbPositionToken(text as string));
  });
});

describe('createMariadbCodec', () => {
  it('wires compare, merge and the token form, strict by default', () => {
    const codec = createMariadbCodec();
    expect(codec.kind).toBe('mariadb');
    expect(codec.compare(pos('0-1-9'), pos('0-1-9'))).toBe('covered');
    expect(codec.compare(pos('0-2-9'), pos('0-1-9'))).toBe('other-history');
    expect(codec.merge(pos('0-1-9'), pos('1-1-1')).format()).toBe('0-1-9,1-1-1');
    expect(codec.decode(codec.encode(pos('0-1-9'))).format()).toBe('0-1-9');
    const lenient = createMariadbCodec({ strictMode: false });
    expect(lenient.compare(pos('0-2-9'), pos('0-1-9'))).toBe('covered');
  });

  it('decodes a token text once: the same frozen position for every token that carries it', () => {
    const codec = createMariadbCodec();
    const text = codec.encode(pos('0-1-9,1-2-5'));
    const first = codec.decode(text);
    expect(codec.decode(text)).toBe(first);
    expect(Object.isFrozen(first.gtids)).toBe(true);
    // Merging never changes the shared object.
    codec.merge(first, pos('0-1-12'));
    expect(first.format()).toBe('0-1-9,1-2-5');
    // A bad text is rejected every time, never remembered.
    rejects(() => codec.decode('0~x'));
    rejects(() => codec.decode('0~x'));
  });
});

describe('classifyMariadbAgainstPrimary with the primary binary log state', () => {
  const pos = (text: string) => MariadbGtidPosition.parse(text);
  // New primary: server 3; it logged server 1's transactions up to 0-1-6 before the failover.
  const state = parseBinlogState('0-1-6,0-3-10');

  it('a former primary GTID past what the new primary logged from it is lost, even below its sequence', () => {
    expect(classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-1-7'), 3)).toBe('ok');
    expect(
      classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-1-7'), 3, { lastSeqByServer: state }),
    ).toBe('other-history');
  });

  it('what the new primary did get from the former one is ok', () => {
    expect(
      classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-1-6'), 3, { lastSeqByServer: state }),
    ).toBe('ok');
  });

  it('pairs the state does not list fall back to the per-domain rules', () => {
    expect(
      classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-2-9'), 3, { lastSeqByServer: state }),
    ).toBe('ok');
  });

  describe('a primary that logs what it replicates (log_slave_updates ON, state read whole)', () => {
    const whole = { lastSeqByServer: state, binlogListsReplicated: true };

    it('a server none of whose transactions it logged: its GTIDs never reached it (rule 0b)', () => {
      // A replica promoted behind the app's back whose own writes passed the lost write's
      // sequence number: server 2 never wrote anything this primary logged.
      expect(classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-2-9'), 3, whole)).toBe(
        'other-history',
      );
      expect(classifyMariadbAgainstPrimary(pos('0-3-10,1-1-4'), pos('0-2-9,1-1-4'), 3, whole)).toBe(
        'other-history',
      );
    });

    it('unless its own position or the last GTID it applied names that server (a backup start)', () => {
      const fromBackup = {
        lastSeqByServer: new Map<string, bigint>(),
        binlogListsReplicated: true,
      };
      expect(classifyMariadbAgainstPrimary(pos('0-5-100'), pos('0-5-90'), 3, fromBackup)).toBe(
        'ok',
      );
      expect(
        classifyMariadbAgainstPrimary(pos('0-3-110'), pos('0-5-90'), 3, {
          ...fromBackup,
          slavePosition: pos('0-5-100'),
        }),
      ).toBe('ok');
      expect(
        classifyMariadbAgainstPrimary(pos('0-3-110'), pos('0-5-101'), 3, {
          ...fromBackup,
          slavePosition: pos('0-5-100'),
        }),
      ).toBe('other-history');
    });

    it('listed pairs and its own transactions are judged as before', () => {
      expect(classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-1-6'), 3, whole)).toBe('ok');
      expect(classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-1-7'), 3, whole)).toBe(
        'other-history',
      );
      expect(classifyMariadbAgainstPrimary(pos('0-3-10'), pos('0-3-9'), 3, whole)).toBe('ok');
    });

    it('the flavour reads it from the primary probe: log_slave_updates, whole state, slave position', () => {
      const flavour = createMariadbFlavour();
      const identity = (row: Record<string, unknown>) =>
        flavour.parsePrimaryProbe([{ position: '0-3-10', server_id: 3, ...row }]).identity;
      const on = identity({ binlog_state: '0-1-6,0-3-10', logs_replicated: 1, slave_pos: '0-1-6' });
      expect(on.binlogListsReplicated).toBe(true);
      expect(flavour.classify(pos('0-3-10'), pos('0-2-9'), on)).toBe('other-history');
      const off = identity({ binlog_state: '0-1-6,0-3-10', logs_replicated: 0 });
      expect(off.binlogListsReplicated).toBe(false);
      expect(flavour.classify(pos('0-3-10'), pos('0-2-9'), off)).toBe('ok');
      const partial = identity({ binlog_state: '0-1-6,junk', logs_replicated: 1 });
      expect(partial.binlogListsReplicated).toBe(false);
      const badSlavePos = identity({ binlog_state: '', logs_replicated: 1, slave_pos: 'junk' });
      expect(flavour.classify(pos('0-3-10'), pos('0-2-9'), badSlavePos)).toBe('other-history');
    });
  });

  it('parses the state, skipping malformed entries and keeping the highest sequence', () => {
    expect([...parseBinlogState('0-1-6, 0-1-4,junk,1-2-18446744073709551615,')]).toEqual([
      ['0-1', 6n],
      ['1-2', 18446744073709551615n],
    ]);
  });
});
