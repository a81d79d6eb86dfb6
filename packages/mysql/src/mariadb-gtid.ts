import { type Comparison, parseBase36BigInt } from '@tidemark/core/adapter';
import { describeInput, invalidPosition } from './invalid.js';
import { trimLayout } from './layout.js';

/**
 * One MariaDB GTID, `domain-server-seq`: the replication domain, the id of the server that wrote
 * the transaction, and its sequence number within the domain.
 */
export interface MariadbGtid {
  /** `gtid_domain_id`, 0 .. 2^32-1. */
  readonly domain: number;
  /** `server_id` of the originating server, 0 .. 2^32-1. */
  readonly server: number;
  /** Sequence number, 0 .. 2^64-1 (a bigint: it can exceed 2^53). */
  readonly seq: bigint;
}

/** Input to {@link MariadbGtidPosition.fromGtids}; `seq` may be a bigint or a safe integer. */
export interface MariadbGtidInput {
  readonly domain: number;
  readonly server: number;
  readonly seq: bigint | number;
}

export interface MariadbPositionParseOptions {
  /** Longest text accepted, in characters. Default {@link DEFAULT_MARIADB_TEXT_LIMIT}. */
  readonly maxLength?: number;
}

/** Options of {@link compareMariadbPositions} and the MariaDB codec. */
export interface MariadbCompareOptions {
  /**
   * The cluster runs with `gtid_strict_mode = ON` (the default assumption: true). Strict mode
   * makes sequence numbers strictly increasing within a domain across the whole topology, so one
   * history never holds two different GTIDs with the same domain and sequence number. Two
   * positions that name the same domain and `seq` with different server ids then come from
   * different histories, and the comparison says `other-history` instead of `covered`. Set false
   * for clusters without strict mode, where such a pair can occur within one history.
   */
  readonly strictMode?: boolean;
}

/** Default bound on {@link MariadbGtidPosition.parse} input: 64 KiB, thousands of domains. */
export const DEFAULT_MARIADB_TEXT_LIMIT = 1 << 16;
/** Longest token text {@link decodeMariadbPositionToken} reads. */
export const MAX_MARIADB_TOKEN_LENGTH = 16_384;

const MAX_UINT32 = 0xffff_ffff;
const MAX_SEQ = (1n << 64n) - 1n;
/** `domain-server-seq` as the server prints it: decimal, no sign, no leading zeros. */
const GTID_TEXT = /^(0|[1-9][0-9]{0,9})-(0|[1-9][0-9]{0,9})-(0|[1-9][0-9]{0,19})$/;
const EMPTY_TOKEN = '0';
const TOKEN_TEXT = /^[0-9a-z.-]+$/;
const TOKEN_GTID = /^([0-9a-z]{1,7})-([0-9a-z]{1,7})-([0-9a-z]{1,13})$/;
/** Only this module holds it, so outside code cannot build an unsorted or duplicated position. */
const NORMALISED: unique symbol = Symbol('normalised MariaDB GTID position');

/**
 * An immutable MariaDB GTID position: at most one GTID per replication domain, sorted by domain,
 * as in `@@gtid_binlog_pos`, `@@gtid_current_pos`, `@@gtid_slave_pos`, and (one GTID) the
 * session-tracked `last_gtid`.
 *
 * How it differs from a MySQL GTID set: MariaDB keeps only the last GTID of each domain, not the
 * set of all transactions, and orders transactions within a domain by sequence number alone. The
 * server id says who wrote a transaction; it is not part of the order. So "has this replica
 * applied my write" is "is its sequence number in that domain at least mine", domain by domain.
 */
export class MariadbGtidPosition {
  /** The position with no domains (a server that has written nothing yet prints `''`). */
  static readonly EMPTY: MariadbGtidPosition = new MariadbGtidPosition([], NORMALISED);

  /** Sorted by domain, one per domain. */
  readonly gtids: readonly MariadbGtid[];

  /** Internal: use {@link MariadbGtidPosition.parse} or {@link MariadbGtidPosition.fromGtids}. */
  constructor(gtids: readonly MariadbGtid[], origin: typeof NORMALISED) {
    if (origin !== NORMALISED) {
      throw new TypeError(
        'Build a MariadbGtidPosition with MariadbGtidPosition.parse or MariadbGtidPosition.fromGtids.',
      );
    }
    this.gtids = Object.freeze(gtids);
  }

  /**
   * Parse the server's text: `domain-server-seq` entries joined by commas (`0-1-9,1-2-5`), in any
   * domain order; `''` is the empty position. Whitespace is allowed only around the whole text.
   * (MariaDB 10.11 prints no whitespace, and its own parser refuses a space after a number.)
   *
   * @throws TokenError `TIDEMARK_POSITION_INVALID` on anything else: numbers out of range
   *   (domain and server 0 .. 2^32-1, seq 0 .. 2^64-1), leading zeros, whitespace or empty
   *   entries between the commas, or a domain named twice (that is a `gtid_binlog_state`, which
   *   keeps one GTID per server; read a position variable instead).
   */
  static parse(text: string, options: MariadbPositionParseOptions = {}): MariadbGtidPosition {
    if (typeof text !== 'string') {
      throw invalidPosition(
        `A MariaDB GTID position must be a string, got ${describeInput(text)}.`,
      );
    }
    const maxLength = options.maxLength ?? DEFAULT_MARIADB_TEXT_LIMIT;
    if (text.length > maxLength) {
      throw invalidPosition(
        `MariaDB GTID position is ${text.length} characters, over the limit of ${maxLength}.`,
      );
    }
    const body = trimLayout(text);
    if (body === '') return MariadbGtidPosition.EMPTY;
    const gtids = body.split(',').map((part) => {
      const match = GTID_TEXT.exec(part);
      if (!match) {
        throw invalidPosition(
          `${describeInput(part)} is not a MariaDB GTID; expected domain-server-seq in decimal, such as 0-1-9.`,
        );
      }
      return {
        domain: Number(match[1]),
        server: Number(match[2]),
        seq: BigInt(match[3] as string),
      };
    });
    return MariadbGtidPosition.fromGtids(gtids);
  }

  /**
   * Build a position from GTIDs in any domain order.
   *
   * @throws TokenError `TIDEMARK_POSITION_INVALID` on out-of-range numbers or a repeated domain.
   */
  static fromGtids(gtids: Iterable<MariadbGtidInput>): MariadbGtidPosition {
    const byDomain = new Map<number, MariadbGtid>();
    for (const input of gtids) {
      const gtid = checkedGtid(input);
      if (byDomain.has(gtid.domain)) {
        throw invalidPosition(
          `MariaDB GTID position names domain ${gtid.domain} twice; a position holds one GTID per domain (gtid_binlog_state holds one per server: read gtid_binlog_pos or gtid_current_pos instead).`,
        );
      }
      byDomain.set(gtid.domain, gtid);
    }
    return createPosition([...byDomain.values()].sort((a, b) => a.domain - b.domain));
  }

  /** True when the position names no domain. */
  get isEmpty(): boolean {
    return this.gtids.length === 0;
  }

  /** The GTID of one domain, if the position names it. */
  domain(id: number): MariadbGtid | undefined {
    for (const gtid of this.gtids) if (gtid.domain === id) return gtid;
    return undefined;
  }

  /**
   * The server's text, `0-1-9,1-2-5`, sorted by domain as MariaDB prints it. Accepted by
   * `MASTER_GTID_WAIT` and `SET GLOBAL gtid_slave_pos`; contains only digits, `-` and `,`.
   */
  format(): string {
    return this.gtids.map((g) => `${g.domain}-${g.server}-${g.seq}`).join(',');
  }

  toString(): string {
    return this.format();
  }

  toJSON(): string {
    return this.format();
  }
}

/**
 * Has `applied` (a replica's position) reached `required` (a session's)?
 *
 * - `covered`: for every domain in `required`, `applied` names it with a sequence number at least
 *   as high (and, in strict mode, the same server id when the numbers are equal).
 * - `other-history`: in strict mode, some domain has the same sequence number with another server
 *   id (see {@link MariadbCompareOptions.strictMode}). Wins over `behind`: waiting cannot fix it.
 * - `behind`: otherwise, including when `applied` does not name a required domain at all.
 *
 * The limits of what a position can tell: with only the last GTID per domain kept, a replica whose
 * domain went past the required number on another history (a failover that lost the write, then
 * new writes) still looks `covered`. Catching that needs the primary's `gtid_binlog_state`.
 */
export function compareMariadbPositions(
  applied: MariadbGtidPosition,
  required: MariadbGtidPosition,
  options: MariadbCompareOptions = {},
): Comparison {
  const strict = options.strictMode ?? true;
  let behind = false;
  for (const need of required.gtids) {
    const have = applied.domain(need.domain);
    if (have === undefined || have.seq < need.seq) behind = true;
    else if (strict && have.seq === need.seq && have.server !== need.server) return 'other-history';
  }
  return behind ? 'behind' : 'covered';
}

/**
 * The least upper bound of two positions: every domain of either, each at the higher sequence
 * number, keeping the server id that goes with it. Equal sequence numbers with different server
 * ids (different histories in strict mode) have no upper bound; the higher server id is kept, an
 * arbitrary but symmetric choice, and comparisons then surface the conflict.
 */
export function mergeMariadbPositions(
  a: MariadbGtidPosition,
  b: MariadbGtidPosition,
): MariadbGtidPosition {
  if (b.isEmpty) return a;
  if (a.isEmpty) return b;
  const out: MariadbGtid[] = [];
  let i = 0;
  let j = 0;
  while (i < a.gtids.length || j < b.gtids.length) {
    const left = a.gtids[i];
    const right = b.gtids[j];
    if (right === undefined || (left !== undefined && left.domain < right.domain)) {
      out.push(left as MariadbGtid);
      i++;
    } else if (left === undefined || right.domain < left.domain) {
      out.push(right);
      j++;
    } else {
      out.push(newer(left, right));
      i++;
      j++;
    }
  }
  return createPosition(out);
}

/**
 * Compact token text: each GTID as `domain-server-seq` in lowercase base 36, joined by `.`,
 * sorted by domain; `0` is the empty position. `0-1-9,1-2-5` becomes `0-1-9.1-2-5`, and
 * `0-1-1000000` becomes `0-1-lfls`.
 */
export function encodeMariadbPositionToken(position: MariadbGtidPosition): string {
  if (position.isEmpty) return EMPTY_TOKEN;
  return position.gtids
    .map((g) => `${g.domain.toString(36)}-${g.server.toString(36)}-${g.seq.toString(36)}`)
    .join('.');
}

/**
 * Strictly decode text made by {@link encodeMariadbPositionToken}; exactly one spelling per
 * position is accepted (the decoder re-encodes and compares).
 *
 * @throws TokenError `TIDEMARK_POSITION_INVALID` on anything else.
 */
export function decodeMariadbPositionToken(text: string): MariadbGtidPosition {
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_MARIADB_TOKEN_LENGTH) {
    throw notAToken();
  }
  if (!TOKEN_TEXT.test(text)) throw notAToken();
  if (text === EMPTY_TOKEN) return MariadbGtidPosition.EMPTY;
  const gtids = text.split('.').map((part) => {
    const match = TOKEN_GTID.exec(part);
    if (!match) throw notAToken();
    const domain = Number.parseInt(match[1] as string, 36);
    const server = Number.parseInt(match[2] as string, 36);
    const seq = parseBase36BigInt(match[3] as string);
    if (domain > MAX_UINT32 || server > MAX_UINT32 || seq > MAX_SEQ) throw notAToken();
    return { domain, server, seq };
  });
  let position: MariadbGtidPosition;
  try {
    position = MariadbGtidPosition.fromGtids(gtids);
  } catch {
    throw notAToken();
  }
  if (encodeMariadbPositionToken(position) !== text) throw notAToken();
  return position;
}

function newer(a: MariadbGtid, b: MariadbGtid): MariadbGtid {
  if (a.seq !== b.seq) return a.seq > b.seq ? a : b;
  return a.server >= b.server ? a : b;
}

function checkedGtid(input: MariadbGtidInput): MariadbGtid {
  const seq =
    typeof input.seq === 'bigint'
      ? input.seq
      : Number.isSafeInteger(input.seq)
        ? BigInt(input.seq)
        : undefined;
  if (
    !isUint32(input.domain) ||
    !isUint32(input.server) ||
    seq === undefined ||
    seq < 0n ||
    seq > MAX_SEQ
  ) {
    throw invalidPosition(
      `MariaDB GTID ${describeInput(`${input.domain}-${input.server}-${input.seq}`)} is out of range: domain and server id are 0 .. 2^32-1, seq is 0 .. 2^64-1.`,
    );
  }
  return Object.freeze({ domain: input.domain, server: input.server, seq });
}

function isUint32(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= MAX_UINT32;
}

function createPosition(gtids: MariadbGtid[]): MariadbGtidPosition {
  return gtids.length === 0
    ? MariadbGtidPosition.EMPTY
    : new MariadbGtidPosition(gtids, NORMALISED);
}

function notAToken(): Error {
  return invalidPosition(
    'Position is not a MariaDB GTID position in Tidemark token form; the token was altered, truncated, or comes from another adapter.',
  );
}
