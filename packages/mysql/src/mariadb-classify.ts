import {
  compareMariadbPositions,
  type MariadbCompareOptions,
  type MariadbGtidPosition,
} from './mariadb-gtid.js';

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
 * Limits: a lost write is visible only until the new primary's `seq` in that domain passes it;
 * after that the position compares as covered everywhere (MariaDB keeps one GTID per domain, not
 * the set of transactions). The verdict assumes the primary replicates from nobody.
 */
export function classifyMariadbAgainstPrimary(
  primary: MariadbGtidPosition,
  required: MariadbGtidPosition,
  primaryServerId: number,
  options: MariadbCompareOptions = {},
): 'ok' | 'impossible' | 'other-history' {
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
