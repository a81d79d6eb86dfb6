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
}

/**
 * Rule 0: the primary logged transactions of server S in domain D up to sequence N (binary log
 * state, with log_slave_updates); a GTID D-S-M with M > N never reached it. Pairs the state does
 * not list say nothing (the server may run without log_slave_updates).
 */
function beyondWhatPrimaryGotFromServer(
  required: MariadbGtidPosition,
  primaryServerId: number,
  lastSeqByServer: ReadonlyMap<string, bigint> | undefined,
): boolean {
  if (lastSeqByServer === undefined) return false;
  return required.gtids.some((need) => {
    if (need.server === primaryServerId) return false;
    const last = lastSeqByServer.get(`${need.domain}-${need.server}`);
    return last !== undefined && need.seq > last;
  });
}

/**
 * Judge a session's MariaDB position against the current primary's `gtid_current_pos` and
 * `server_id`, the one server every new transaction comes from (the MariaDB counterpart of
 * {@link classifyAgainstPrimary}).
 *
 * 1. The primary's position covers `required`: `ok`.
 * 2. Some domain of `required` is beyond the primary (a higher `seq`, or a domain the primary has
 *    never seen) and carries the primary's own server id: the primary numbers its own
 *    transactions and has not written this one, so the token was not issued by this cluster:
 *    `impossible`. This wins over rule 3.
 * 3. Otherwise the missing GTIDs come from other servers (a former primary whose last writes never
 *    reached this one), or, in strict mode, name the same `seq` as the primary with another server
 *    id (two histories): `other-history`.
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
  if (beyondWhatPrimaryGotFromServer(required, primaryServerId, options.lastSeqByServer)) {
    return 'other-history';
  }
  if (compareMariadbPositions(primary, required, options) === 'covered') return 'ok';
  let otherHistory = false;
  for (const need of required.gtids) {
    const have = primary.domain(need.domain);
    if (have === undefined || have.seq < need.seq) {
      if (need.server === primaryServerId) return 'impossible';
      otherHistory = true;
    } else if (have.seq === need.seq && have.server !== need.server) {
      otherHistory = true;
    }
  }
  // Not covered, yet nothing missing: only possible when the comparison's strictness differs.
  return otherHistory ? 'other-history' : 'ok';
}
