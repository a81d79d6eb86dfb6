import {
  compareMariadbPositions,
  type MariadbCompareOptions,
  type MariadbGtidPosition,
} from './mariadb-gtid.js';

export interface MariadbClassifyOptions extends MariadbCompareOptions {
  /**
   * The primary's `@@gtid_binlog_state` as `domain-server` -> last sequence number. With it, a
   * GTID of another server past the last one the primary logged from that server is known lost,
   * even after the primary's own sequence in that domain has moved past it (rule 0 below).
   */
  readonly lastSeqByServer?: ReadonlyMap<string, bigint> | undefined;
  /**
   * The primary logs the transactions it replicates (`log_slave_updates` ON) and its binary log
   * state was read whole, so a `domain-server` pair the state does not list is a server none of
   * whose transactions in that domain ever reached it (rule 0b below).
   */
  readonly binlogListsReplicated?: boolean | undefined;
  /** The primary's `@@gtid_slave_pos`: the last GTID it applied as a replica, per domain. */
  readonly slavePosition?: MariadbGtidPosition | undefined;
}

/**
 * Rule 0: the primary logged transactions of server S in domain D up to sequence N (binary log
 * state, with log_slave_updates); a GTID D-S-M with M > N never reached it.
 *
 * Rule 0b: the state lists no D-S pair at all, and the primary logs what it replicates: no
 * transaction of S in D ever reached it, unless its own position or the last GTID it applied as a
 * replica names D-S at M or later (a server set up from a backup, whose binary log starts after
 * it). This is the promoted replica whose own transactions passed a lost write's sequence number
 * before anything of the old primary was logged. Without log_slave_updates an unlisted pair says
 * nothing (the server may have applied S's transactions without logging them).
 */
function beyondWhatPrimaryGotFromServer(
  primary: MariadbGtidPosition,
  required: MariadbGtidPosition,
  primaryServerId: number,
  options: MariadbClassifyOptions,
): boolean {
  const { lastSeqByServer } = options;
  if (lastSeqByServer === undefined) return false;
  return required.gtids.some((need) => {
    if (need.server === primaryServerId) return false;
    const last = lastSeqByServer.get(`${need.domain}-${need.server}`);
    if (last !== undefined) return need.seq > last;
    if (options.binlogListsReplicated !== true) return false;
    const namesIt = (position: MariadbGtidPosition | undefined) => {
      const gtid = position?.domain(need.domain);
      return gtid !== undefined && gtid.server === need.server && gtid.seq >= need.seq;
    };
    return !namesIt(primary) && !namesIt(options.slavePosition);
  });
}

/**
 * Judge a session's MariaDB position against the current primary's `gtid_current_pos` and
 * `server_id`, the one server every new transaction comes from (the MariaDB counterpart of
 * {@link classifyAgainstPrimary}).
 *
 * 1. The primary's position covers `required`: `ok`.
 * 2. Some missing GTID comes from another server (a former primary whose last writes never
 *    reached this one), or, in strict mode, names the same `seq` as the primary with another
 *    server id (two histories): `other-history`. This wins over rule 3: a replica judged against
 *    a primary sample older than its own can hold both a lost write and the primary's newest
 *    transactions, and must not count as on the primary's history (see the MySQL
 *    `classifyAgainstPrimary`).
 * 3. Every domain of `required` beyond the primary (a higher `seq`, or a domain the primary has
 *    never seen) carries the primary's own server id: the primary numbers its own transactions
 *    and had not written these when its position was read. Against a fresh read of the primary
 *    the token was not issued by this cluster: `impossible`.
 *
 * Limits: without the binary log state (rule 0) a lost write is visible only until the new
 * primary's `seq` in that domain passes it; after that the position compares as covered (MariaDB
 * keeps one GTID per domain, not the set of transactions). The verdict assumes the primary
 * replicates from nobody.
 */
export function classifyMariadbAgainstPrimary(
  primary: MariadbGtidPosition,
  required: MariadbGtidPosition,
  primaryServerId: number,
  options: MariadbClassifyOptions = {},
): 'ok' | 'impossible' | 'other-history' {
  if (beyondWhatPrimaryGotFromServer(primary, required, primaryServerId, options)) {
    return 'other-history';
  }
  if (compareMariadbPositions(primary, required, options) === 'covered') return 'ok';
  const strict = options.strictMode ?? true;
  let ownAhead = false;
  for (const need of required.gtids) {
    const have = primary.domain(need.domain);
    if (have === undefined || have.seq < need.seq) {
      if (need.server !== primaryServerId) return 'other-history';
      ownAhead = true;
    } else if (strict && have.seq === need.seq && have.server !== need.server) {
      return 'other-history';
    }
  }
  // Not covered, yet nothing missing: only possible when the comparison's strictness differs.
  return ownAhead ? 'impossible' : 'ok';
}
