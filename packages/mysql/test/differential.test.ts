/**
 * Differential test of the GTID set algebra against a real MySQL server: on random sets, compare
 * isSubsetOf with GTID_SUBSET, subtract with GTID_SUBTRACT, union with the server's own union
 * (its parser merges a comma-joined text, which GTID_SUBTRACT(text, '') prints canonically), our
 * canonical text with the server's, and our strict parser's verdicts with the server's.
 *
 * The server: TIDEMARK_MYSQL_URL if set (any MySQL 8.0+; tagged GTIDs are included when it is 8.3
 * or newer), else a source-only MySQL 9.7 started through @tidemark/test-clusters and torn down
 * after. If TIDEMARK_TARGETS is set without mysql97 the file is skipped, loudly; if mysql97 cannot
 * start, it fails. The GTID functions are pure: the test changes nothing on the server.
 * TIDEMARK_DIFFERENTIAL_RUNS sets the cases per property (default 300).
 */
import fc from 'fast-check';
import mysql, { type Connection, type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GtidSet } from '../src/index.js';
import { messyText, type RawRange, smallRanges, toSet, wideRanges } from './support/arbitraries.js';
import {
  type DifferentialServer,
  differentialPlan,
  openDifferentialServer,
  skipBanner,
} from './support/differential-server.js';

const plan = differentialPlan();
const RUNS = runsFromEnv(process.env['TIDEMARK_DIFFERENTIAL_RUNS']);

/** Cases per property; a typo must not turn into NaN runs (fast-check would then run none). */
function runsFromEnv(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 300;
  const runs = Number(text);
  if (!Number.isInteger(runs) || runs < 1) {
    throw new Error(
      `TIDEMARK_DIFFERENTIAL_RUNS must be a positive integer, got ${JSON.stringify(text)}`,
    );
  }
  return runs;
}

const skipped = plan.kind === 'skipped';
if (plan.kind === 'skipped') console.warn(skipBanner(plan.reason));

describe.skipIf(skipped)('differential: GtidSet against a real MySQL server', () => {
  let mysqlServer: DifferentialServer | undefined;
  let connection: Connection | undefined;
  let tagged = false;
  /** Property cases compared with the server, per property; printed and checked against RUNS. */
  const cases: Record<string, number> = {};
  let serverQueries = 0;
  const verdicts = { bothAccept: 0, bothReject: 0, onlyServerAccepts: 0 };
  /** A few texts the server reads but the strict parser refuses, to show in the log. */
  const lenientExamples: string[] = [];

  beforeAll(async () => {
    if (plan.kind === 'skipped') return; // describe.skipIf already skips; this narrows the type
    mysqlServer = await openDifferentialServer(plan);
    connection = await mysql.createConnection(mysqlServer.url);
    const [rows] = await connection.query<RowDataPacket[]>('SELECT VERSION() AS version');
    const version = String(rows[0]?.version);
    if (/mariadb/i.test(version)) {
      throw new Error(
        `${mysqlServer.origin} points at ${version}; MariaDB has no GTID sets. Point it at MySQL.`,
      );
    }
    const [major = 0, minor = 0] = version.split('.').map(Number);
    tagged = major > 8 || (major === 8 && minor >= 3);
    console.info(
      `differential test against MySQL ${version} from ${mysqlServer.origin}; tagged GTIDs: ${tagged}; ${RUNS} cases per property`,
    );
  });

  afterAll(async () => {
    const total = Object.values(cases).reduce((sum, n) => sum + n, 0);
    console.info(
      `differential cases compared with the server: ${total} in all (${serverQueries} server queries)`,
      cases,
    );
    console.info('parser verdicts on fuzzed text (ours vs server):', verdicts);
    console.info('examples only the server accepts:', lenientExamples);
    try {
      await connection?.end();
    } finally {
      await mysqlServer?.close();
    }
  });

  async function scalar(sql: string, values: unknown[]): Promise<unknown> {
    if (!connection) throw new Error('no server connection: beforeAll did not connect');
    serverQueries++;
    const [rows] = await connection.query<RowDataPacket[]>(sql, values);
    return rows[0]?.result;
  }

  function countCase(property: string): void {
    cases[property] = (cases[property] ?? 0) + 1;
  }

  /** fast-check ran the body RUNS times (more while shrinking): a property that ran none proves nothing. */
  function expectEveryCaseRan(property: string): void {
    expect(cases[property] ?? 0).toBeGreaterThanOrEqual(RUNS);
  }

  /** GTID_SUBTRACT(text, ''): the server's canonical text of whatever it parsed. */
  function serverCanonical(text: string): Promise<unknown> {
    return scalar("SELECT GTID_SUBTRACT(?, '') AS result", [text]);
  }

  /** Ranges the server understands: tags only on 8.3+. */
  function ranges(): fc.Arbitrary<RawRange[]> {
    return fc
      .oneof(smallRanges(), wideRanges())
      .map((list) => (tagged ? list : list.map((r) => ({ ...r, tag: 0 }))));
  }

  it('isSubsetOf agrees with GTID_SUBSET', async () => {
    await fc.assert(
      fc.asyncProperty(ranges(), ranges(), fc.boolean(), async (ra, rb, nest) => {
        countCase('subset');
        const a = toSet(ra);
        // Half the time make a a genuine subset, so both answers are exercised.
        const b = nest ? toSet(rb).union(a) : toSet(rb);
        const server = await scalar('SELECT GTID_SUBSET(?, ?) AS result', [a.format(), b.format()]);
        expect(Number(server)).toBe(a.isSubsetOf(b) ? 1 : 0);
      }),
      { numRuns: RUNS },
    );
    expectEveryCaseRan('subset');
  });

  it('subtract agrees with GTID_SUBTRACT, text for text', async () => {
    await fc.assert(
      fc.asyncProperty(ranges(), ranges(), async (ra, rb) => {
        countCase('subtract');
        const a = toSet(ra);
        const b = toSet(rb);
        const server = await scalar('SELECT GTID_SUBTRACT(?, ?) AS result', [
          a.format(),
          b.format(),
        ]);
        expect(server).toBe(a.subtract(b).format());
      }),
      { numRuns: RUNS },
    );
    expectEveryCaseRan('subtract');
  });

  it('union and intersection agree with the server', async () => {
    await fc.assert(
      fc.asyncProperty(ranges(), ranges(), async (ra, rb) => {
        countCase('unionIntersection');
        const a = toSet(ra);
        const b = toSet(rb);
        // The manual's union: the two texts joined by a comma; the server merges while parsing.
        expect(await serverCanonical(`${a.format()},${b.format()}`)).toBe(a.union(b).format());
        const intersection = await scalar(
          'SELECT GTID_SUBTRACT(?, GTID_SUBTRACT(?, ?)) AS result',
          [a.format(), a.format(), b.format()],
        );
        expect(intersection).toBe(a.intersection(b).format());
      }),
      { numRuns: RUNS },
    );
    expectEveryCaseRan('unionIntersection');
  });

  it('our canonical text is the server canonical text for messy input', async () => {
    const withText = ranges().chain((list) => messyText(list).map((text) => ({ list, text })));
    await fc.assert(
      fc.asyncProperty(withText, async ({ list, text }) => {
        countCase('canonical');
        const ours = GtidSet.parse(text).format();
        expect(ours).toBe(toSet(list).format());
        expect(await serverCanonical(text)).toBe(ours);
      }),
      { numRuns: RUNS },
    );
    expectEveryCaseRan('canonical');
  });

  it('the strict parser never accepts what the server rejects, and reads the same set', async () => {
    const alphabet = '0123456789abcdefABCDEF-:,_ \nt';
    const sample = fc.oneof(
      ranges().chain((list) => messyText(list)),
      ranges().chain((list) =>
        fc
          .tuple(
            messyText(list),
            fc.nat(),
            fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 3 }),
          )
          .map(([text, at, insert]) => {
            const i = at % (text.length + 1);
            return text.slice(0, i) + insert + text.slice(i + (insert.length % 2));
          }),
      ),
    );
    await fc.assert(
      fc.asyncProperty(sample, async (text) => {
        countCase('parser');
        let ours: string | undefined;
        try {
          ours = GtidSet.parse(text).format();
        } catch {
          ours = undefined;
        }
        let server: unknown;
        try {
          server = await serverCanonical(text);
        } catch (error) {
          expect((error as { errno?: number }).errno).toBe(1772); // ER_MALFORMED_GTID_SET_SPECIFICATION
          server = undefined;
        }
        if (ours !== undefined) {
          expect(server).toBe(ours);
          verdicts.bothAccept++;
        } else if (server === undefined) verdicts.bothReject++;
        else {
          verdicts.onlyServerAccepts++;
          if (lenientExamples.length < 5) lenientExamples.push(JSON.stringify(text));
        }
      }),
      { numRuns: RUNS },
    );
    expectEveryCaseRan('parser');
  });

  it('agrees on the largest transaction number', async () => {
    countCase('largestGno');
    const uuid = '3e11fa47-71ca-11e1-9e33-c80aa9429562';
    const largest = `${uuid}:9223372036854775806`;
    expect(await serverCanonical(largest)).toBe(GtidSet.parse(largest).format());
    const beyond = `${uuid}:9223372036854775807`;
    await expect(serverCanonical(beyond)).rejects.toMatchObject({ errno: 1772 });
    expect(() => GtidSet.parse(beyond)).toThrow();
  });
});

// Declared only when skipped, so a run that compared nothing shows a skip in the counts and a run
// that did compare shows none.
if (plan.kind === 'skipped') {
  describe('differential: skipped', () => {
    it.skip(`SKIPPED: ${plan.reason}; GtidSet was NOT compared with MySQL`, () => {});
  });
}
