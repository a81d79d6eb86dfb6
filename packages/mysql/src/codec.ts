import type { Comparison, PositionCodec, PrimaryVerdict } from '@tidemark/core/adapter';
import { GtidSet } from './gtid-set.js';
import { decodeGtidSetToken, encodeGtidSetToken } from './gtid-token.js';
import { memoizeParse } from './parse-cache.js';
import { normalizeUuid } from './uuid.js';

/**
 * The position codec for MySQL: a position is a {@link GtidSet}, the transactions a session
 * depends on; tokens hold it in the compact form of {@link encodeGtidSetToken}.
 *
 * - `compare(applied, required)` is `covered` when `required` is a subset of `applied` (exactly
 *   what `GTID_SUBSET(required, applied)` and `WAIT_FOR_EXECUTED_GTID_SET(required)` test), else
 *   `behind`. It never answers `other-history`: a GTID set alone cannot tell a replica that has
 *   not received a transaction yet from one that never will. That verdict needs the current
 *   primary's `gtid_executed` and `server_uuid`; see {@link classifyAgainstPrimary}.
 * - `merge` is set union, the least upper bound under the subset order.
 */
export function createMysqlCodec(): PositionCodec<GtidSet> {
  return {
    kind: 'mysql',
    // Decoded positions are frozen: every token that carries one shares one parse.
    decode: memoizeParse(decodeGtidSetToken),
    encode: encodeGtidSetToken,
    compare(applied: GtidSet, required: GtidSet): Comparison {
      return required.isSubsetOf(applied) ? 'covered' : 'behind';
    },
    merge(a: GtidSet, b: GtidSet): GtidSet {
      return a.union(b);
    },
    compact: compactGtidSet,
  };
}

/**
 * `position` plus the transactions `primary` holds inside each of the position's sources'
 * spans (first to last transaction number). A session that wrote `u:19`, `u:23` and `u:42`
 * while others wrote in between becomes `u:19-42` once the primary's sample has them: one
 * interval instead of one per write. A replica that applied `u:42` has applied everything before
 * it from that source too (commit order is preserved on replicas), so the session waits no
 * longer; and only transactions the primary has are added, so nothing is required that will not
 * arrive.
 */
export function compactGtidSet(position: GtidSet, primary: GtidSet): GtidSet {
  const spans = GtidSet.fromEntries(
    position.entries.map(({ uuid, tag, intervals }) => ({
      uuid,
      tag,
      intervals: [{ start: intervals[0]!.start, end: intervals[intervals.length - 1]!.end }],
    })),
  );
  return position.union(primary.intersection(spans));
}

/**
 * The verdict of {@link classifyAgainstPrimary}, core's `PrimaryVerdict`, re-exported for
 * existing imports. For GTID sets:
 * - `ok`: the primary has executed every required transaction; replicas can catch up.
 * - `other-history`: the session depends on transactions the primary never executed and never
 *   will: they came from another server (a former primary) and were lost in a failover.
 * - `impossible`: the session claims transactions of the primary's own UUID that the primary has
 *   not executed. The primary numbers its own transactions, so such a token was not issued by this
 *   cluster (forged, or from another cluster under the same name).
 */
export type { PrimaryVerdict };

/**
 * Judge a session's required GTID set against the current primary, the one server every new
 * transaction in the cluster comes from.
 *
 * Reasoning. Every GTID carries the UUID of the server that created it. Anything the primary has
 * not executed can only still arrive if some server keeps feeding it to the primary, and in a
 * single-primary topology nothing does: the primary is the source, not a replica. So:
 *
 * 1. `required` is a subset of `primaryExecuted`: `ok`.
 * 2. A missing transaction carries another server's UUID: that server created it (it was primary
 *    before a failover, or someone wrote to it directly) and it never reached the current
 *    primary. Waiting will not help: `other-history`. This wins over rule 3, whatever else the
 *    set holds: those transactions are not in the primary's history, and no own transaction
 *    beside them changes that.
 * 3. Every missing transaction carries the primary's own UUID: the primary assigns those numbers
 *    itself, in order and without gaps, and had not assigned them when `primaryExecuted` was
 *    read. Against a fresh read of the primary a genuine token cannot hold them: `impossible`.
 *
 * Why rule 2 wins. The same verdict judges replicas against a primary sample that may be older
 * than the replica's own sample: a replica that follows the new primary but kept a lost write
 * (an errant transaction of the old primary) holds both the lost write and the primary's newest
 * transactions. Were `impossible` (read there as "ahead of the sample") to win, that replica
 * would count as on the primary's history and serve the lost write as fresh.
 *
 * Limits the caller must respect (the adapter's job, not this function's):
 * - The verdict is only final when the primary applies nothing from elsewhere. Right after a
 *   failover the new primary may still be applying relay logs of the old one; call this only once
 *   the primary's replication applier has stopped (or re-check before acting on the verdict).
 * - Group Replication writes every transaction under the group's UUID
 *   (`group_replication_group_name`), not the member's `server_uuid`: pass the group name.
 * - GTIDs are unique only while UUIDs are. A former primary rebuilt from another server's data
 *   (clone, backup) that keeps its UUID numbers new transactions from the first gap, reusing the
 *   GTIDs of its own lost writes: tokens holding those first look `impossible`, later `ok`. A
 *   server restored with another server's `auto.cnf` shares that server's UUID. Give every
 *   rebuilt server a fresh UUID (delete `auto.cnf` before its first start).
 *
 * @param primaryExecuted the primary's `@@GLOBAL.gtid_executed`
 * @param required the session's position
 * @param primaryUuid the primary's `@@server_uuid` (or the Group Replication group name)
 * @throws TokenError `TIDEMARK_POSITION_INVALID` when `primaryUuid` is not a UUID.
 */
export function classifyAgainstPrimary(
  primaryExecuted: GtidSet,
  required: GtidSet,
  primaryUuid: string,
): PrimaryVerdict {
  const own = normalizeUuid(primaryUuid);
  const missing = required.subtract(primaryExecuted);
  if (missing.isEmpty) return 'ok';
  // Tagged transactions of the primary's UUID are its own too (`gtid_next = 'AUTOMATIC:tag'`).
  return missing.entries.some((entry) => entry.uuid !== own) ? 'other-history' : 'impossible';
}
