import type pg from 'pg';
import type { LabPositions, ReplicaSample } from '../types.js';
import { lsnToBigInt } from './lsn.js';

// "Lag" as commonly computed: time since the last replayed transaction, but 0 when the replica
// has replayed everything it received (otherwise an idle primary looks like a lagging replica).
const SAMPLE_SQL = `
SELECT pg_last_wal_replay_lsn()::text AS replay_lsn,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8 AS lag_seconds`;

/** The lab router on PostgreSQL: LSNs as bigints. */
export const pgLab: LabPositions<pg.PoolClient, bigint> = {
  rule: "its replay LSN >= the session's last write LSN",
  async afterWrite(client) {
    // The insert position is never below the commit record just acknowledged.
    const result = await client.query<{ lsn: string }>(
      'SELECT pg_current_wal_insert_lsn()::text AS lsn',
    );
    return lsnToBigInt(result.rows[0]!.lsn);
  },
  sample: (replica) =>
    replica.use(async (client): Promise<ReplicaSample<bigint> | undefined> => {
      const row = (
        await client.query<{ replay_lsn: string | null; lag_seconds: number }>(SAMPLE_SQL)
      ).rows[0];
      return row?.replay_lsn == null
        ? undefined
        : { applied: lsnToBigInt(row.replay_lsn), lagSeconds: row.lag_seconds };
    }),
  covers: (applied, required) => applied >= required,
};
