import { describe, expect, it } from 'vitest';
import { memberHost } from '../src/databases/mongo-sim/index.js';
import { labLagSeconds } from '../src/databases/mongo-sim/lab.js';
import { appliedOpTime, opTimeToBigInt } from '../src/databases/mongo-sim/optime.js';
import {
  labGtidSubset,
  labMariadbCovers,
  parseLabGtidSet,
  parseLabMariadbPosition,
} from '../src/databases/mysql/lab-gtid.js';
import { lsnToBigInt } from '../src/databases/pg/lsn.js';
import { DemoErrorCode } from '../src/errors.js';
import { LIST_LENGTH, OrderLedger } from '../src/ledger.js';
import { parseOptions } from '../src/options.js';
import { pickOthers, seededRandom } from '../src/random.js';
import { formatJson, formatLine } from '../src/report.js';
import { RESULT_FIELDS, type RunResult } from '../src/result.js';
import { percentile } from '../src/stats.js';

describe('OrderLedger', () => {
  it('expects only the latest 20 acknowledged orders of the reader', () => {
    const ledger = new OrderLedger();
    for (let id = 1; id <= 25; id++) ledger.acknowledge(7, id);
    ledger.acknowledge(8, 100);
    expect(ledger.expected(7)).toEqual(Array.from({ length: LIST_LENGTH }, (_, i) => i + 6));
    // An old order falling off the list is not "missing".
    expect(
      ledger.missingFrom(
        7,
        [25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6],
      ),
    ).toEqual([]);
    expect(ledger.missingFrom(7, [24, 23])).toContain(25);
    expect(ledger.missingFrom(8, [])).toEqual([100]);
    expect(ledger.missingFrom(9, [])).toEqual([]);
  });
});

describe('parseOptions', () => {
  it('has the documented defaults', () => {
    const options = parseOptions([]);
    expect(options).toMatchObject({
      db: 'pg',
      orders: 1000,
      pausedOrders: 300,
      customers: 100,
      scenarios: ['idle', 'paused'],
      strategies: ['naive', 'time-window', 'lab-router', 'tidemark', 'shadow'],
      external: undefined,
      json: false,
      report: 'tidemark-report.html',
    });
  });

  it('accepts the forwarded -- separator and every option', () => {
    const options = parseOptions([
      '--',
      '--json',
      '--orders',
      '5',
      '--paused-orders',
      '3',
      '--scenario',
      'paused',
      '--strategy',
      'tidemark,naive',
      '--primary-url',
      'postgres://p',
      '--replica-url',
      'postgres://r',
      '--fallback-burst',
      '10',
    ]);
    expect(options).toMatchObject({
      json: true,
      orders: 5,
      pausedOrders: 3,
      scenarios: ['paused'],
      strategies: ['naive', 'tidemark'],
      external: { primaryUrl: 'postgres://p', replicaUrl: 'postgres://r' },
    });
    expect(options.tidemark.fallbackBurst).toBe(10);
  });

  it('takes --db and URLs of that database', () => {
    expect(parseOptions(['--db', 'mysql']).db).toBe('mysql');
    expect(
      parseOptions([
        '--db',
        'mariadb',
        '--primary-url',
        'mysql://root@127.0.0.1:13306/test',
        '--replica-url',
        'mariadb://root@127.0.0.1:13307/test',
      ]),
    ).toMatchObject({
      db: 'mariadb',
      external: {
        primaryUrl: 'mysql://root@127.0.0.1:13306/test',
        replicaUrl: 'mariadb://root@127.0.0.1:13307/test',
      },
    });
  });

  it('takes --db mongo-sim without URLs', () => {
    expect(parseOptions(['--db', 'mongo-sim', '--json'])).toMatchObject({
      db: 'mongo-sim',
      external: undefined,
      json: true,
    });
  });

  it.each([
    [['--db', 'mongo-sim', '--primary-url', 'mongodb://p', '--replica-url', 'mongodb://r']],
    [['--db', 'mongo-sim', '--primary-url', 'mongodb://p']],
    [['--db', 'mongo-sim', '--replica-url', 'postgres://r']],
  ])('rejects URLs with --db mongo-sim: %j', (args) => {
    expect(() => parseOptions(args)).toThrow(
      expect.objectContaining({
        code: DemoErrorCode.Usage,
        message: expect.stringContaining('--db mongo-sim runs the MongoDB replica-set simulator'),
      }),
    );
  });

  it('points mongodb:// URLs at --db mongo-sim', () => {
    expect(() =>
      parseOptions(['--primary-url', 'mongodb://p:27017', '--replica-url', 'mongodb://r:27017']),
    ).toThrow(
      expect.objectContaining({
        code: DemoErrorCode.Usage,
        message: expect.stringContaining('(--db mongo-sim), which takes no URLs'),
      }),
    );
  });

  it.each([
    [['--db', 'oracle']],
    [['--db', 'mongo']],
    [['--primary-url', 'mysql://p', '--replica-url', 'mysql://r']],
    [['--db', 'mysql', '--primary-url', 'postgres://p', '--replica-url', 'postgres://r']],
    [['--db', 'mariadb', '--primary-url', 'mysql://p', '--replica-url', 'r.example:3306']],
    [['--orders', '0']],
    [['--orders', 'many']],
    [['--scenario', 'busy']],
    [['--strategy', 'naive,magic']],
    [['--primary-url', 'postgres://p']],
    [['--unknown']],
  ])('rejects %j with a usage error', (args) => {
    expect(() => parseOptions(args)).toThrow(
      expect.objectContaining({ code: DemoErrorCode.Usage }),
    );
  });
});

describe('workload helpers', () => {
  it('replays the same sequence for the same seed', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const seqA = Array.from({ length: 10 }, () => a.int(1, 100));
    expect(Array.from({ length: 10 }, () => b.int(1, 100))).toEqual(seqA);
    expect(seqA.every((n) => n >= 1 && n <= 100)).toBe(true);
  });

  it('picks distinct other customers, never the writer', () => {
    const random = seededRandom(3);
    for (let i = 0; i < 200; i++) {
      const others = pickOthers(random, 6, 2, 4);
      expect(new Set(others).size).toBe(4);
      expect(others).not.toContain(2);
    }
    expect(() => pickOthers(random, 4, 1, 4)).toThrow(RangeError);
  });

  it('computes nearest-rank percentiles', () => {
    expect(percentile([], 50)).toBeUndefined();
    expect(percentile([5, 1, 3], 50)).toBe(3);
    expect(
      percentile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        99,
      ),
    ).toBe(99);
  });

  it('checks GTID set containment as GTID_SUBSET does', () => {
    const a = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
    const b = '4e11fa47-71ca-11e1-9e33-c80aa9429562';
    const applied = parseLabGtidSet(`${a}:1-5:7-9,\n${b}:1-3`);
    expect(labGtidSubset(parseLabGtidSet(`${a}:3-5`), applied)).toBe(true);
    expect(labGtidSubset(parseLabGtidSet(`${a}:1-9`), applied)).toBe(false); // 6 is missing
    expect(labGtidSubset(parseLabGtidSet(`${b}:4`), applied)).toBe(false);
    expect(labGtidSubset(parseLabGtidSet(`${a.toUpperCase()}:8,${b}:2`), applied)).toBe(true);
    expect(labGtidSubset(parseLabGtidSet(''), applied)).toBe(true);
    // Touching intervals merge: 1-3 and 4-5 together hold 2-5.
    expect(labGtidSubset(parseLabGtidSet(`${a}:2-5`), parseLabGtidSet(`${a}:1-3:4-5`))).toBe(true);
    // Tagged transactions are a separate series of the same UUID.
    expect(labGtidSubset(parseLabGtidSet(`${a}:tag_1:1`), applied)).toBe(false);
    expect(
      labGtidSubset(parseLabGtidSet(`${a}:tag_1:1`), parseLabGtidSet(`${a}:1:tag_1:1-2`)),
    ).toBe(true);
    expect(() => parseLabGtidSet('nope:1')).toThrow();
  });

  it('compares MariaDB GTID positions per domain by sequence number', () => {
    const applied = parseLabMariadbPosition('0-1-9,1-2-5');
    expect(labMariadbCovers(applied, parseLabMariadbPosition('0-1-9'))).toBe(true);
    expect(labMariadbCovers(applied, parseLabMariadbPosition('0-3-10'))).toBe(false);
    expect(labMariadbCovers(applied, parseLabMariadbPosition('2-1-1'))).toBe(false);
    expect(labMariadbCovers(applied, parseLabMariadbPosition(''))).toBe(true);
    expect(() => parseLabMariadbPosition('0-1')).toThrow();
  });

  it('orders MongoDB oplog times by seconds, then ordinal', () => {
    const early = opTimeToBigInt({ t: 1_700_000_000, i: 4_000_000_000 });
    const later = opTimeToBigInt({ t: 1_700_000_001, i: 1 });
    expect(later > early).toBe(true);
    expect(opTimeToBigInt({ t: 5, i: 2 }) > opTimeToBigInt({ t: 5, i: 1 })).toBe(true);
    expect(opTimeToBigInt({ t: 5, i: 2 })).toBe((5n << 32n) | 2n);
  });

  it("reads a MongoDB member's applied optime and lag from its hello reply", () => {
    const reply = (applied: number, clusterTime?: number) => ({
      lastWrite: { opTime: { ts: { t: applied, i: 3 }, t: 1 } },
      ...(clusterTime === undefined
        ? {}
        : { $clusterTime: { clusterTime: { t: clusterTime, i: 9 } } }),
    });
    expect(appliedOpTime(reply(100))).toEqual({ t: 100, i: 3 });
    expect(() => appliedOpTime({ ismaster: true })).toThrow(/lastWrite/);
    // Caught up: the newest time it has heard of is the one it applied.
    expect(labLagSeconds(reply(100, 100))).toBe(0);
    // Replay paused for 7 s while it kept hearing of newer writes.
    expect(labLagSeconds(reply(100, 107))).toBe(7);
    // No cluster time: unknown, which the lab router treats as "do not read here".
    expect(labLagSeconds(reply(100))).toBeUndefined();
  });

  it('takes the host of the direct replica URL for the MongoDB adapter', () => {
    expect(memberHost('mongodb://127.0.0.1:40123/?directConnection=true')).toBe('127.0.0.1:40123');
    expect(memberHost('mongodb://user:pw@db2:27017')).toBe('db2:27017');
    expect(() => memberHost('mongodb://a:1,b:2/?replicaSet=rs')).toThrow(/one-member/);
  });

  it('compares LSNs numerically, not as text', () => {
    expect(lsnToBigInt('0/A') < lsnToBigInt('0/10')).toBe(true);
    expect(lsnToBigInt('1/0')).toBe(1n << 32n);
    expect(() => lsnToBigInt('nope')).toThrow();
  });
});

describe('output format', () => {
  const result: RunResult = {
    scenario: 'idle',
    strategy: 'tidemark',
    orders: 10,
    reads: 50,
    missing_in_list: 0,
    replica_reads: 49,
    primary_reads: 1,
    errors: 0,
    waits: 0,
    wait_ms_p50: null,
    read_ms_p50: 0.5,
    read_ms_p99: 2.25,
    checked_reads: 40,
    missing_after_write: 0,
    duration_s: 0.3,
    db: 'pg',
  };

  it('prints key=value pairs in the documented order', () => {
    const line = formatLine(result);
    expect(
      line.startsWith('scenario=idle strategy=tidemark orders=10 reads=50 missing_in_list=0 '),
    ).toBe(true);
    expect(line.split(' ').map((pair) => pair.split('=')[0])).toEqual([...RESULT_FIELDS]);
    expect(line).toContain('wait_ms_p50=-');
    expect(line.endsWith(' duration_s=0.3 db=pg')).toBe(true);
  });

  it('prints one JSON object with the same fields', () => {
    const json = formatJson(result);
    expect(json).not.toContain('\n');
    expect(JSON.parse(json)).toEqual(result);
  });
});
