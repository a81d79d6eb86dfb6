import type pg from 'pg';
import { lsnToBigInt } from './lsn.js';

export interface ReplicaSample {
  /** pg_last_wal_replay_lsn(), parsed. */
  readonly replayLsn: bigint;
  /** Seconds behind; 0 when everything received has been replayed. */
  readonly lagSeconds: number;
}

// "Lag" as commonly computed: time since the last replayed transaction, but 0 when the replica
// has replayed everything it received (otherwise an idle primary looks like a lagging replica).
const SAMPLE_SQL = `
SELECT pg_last_wal_replay_lsn()::text AS replay_lsn,
       CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)
       END::float8 AS lag_seconds`;

/**
 * The lab router's monitor: samples the replica's replay LSN and lag on a timer. Routing reads
 * the latest sample and never waits for a fresher one.
 */
export class ReplicaSampler {
  private latest: ReplicaSample | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly replica: pg.Pool,
    private readonly intervalMs: number,
  ) {}

  /** Take the first sample, then keep sampling every `intervalMs`. */
  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
  }

  /** The latest sample; undefined while the replica has never answered. */
  current(): ReplicaSample | undefined {
    return this.latest;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
  }

  private sample(): Promise<void> {
    // One sample at a time: a slow replica must not pile up queries.
    this.inFlight ??= this.replica
      .query<{ replay_lsn: string | null; lag_seconds: number }>(SAMPLE_SQL)
      .then((result) => {
        const row = result.rows[0];
        this.latest =
          row?.replay_lsn == null
            ? undefined
            : { replayLsn: lsnToBigInt(row.replay_lsn), lagSeconds: row.lag_seconds };
      })
      .catch(() => {
        // An unreachable replica has no trustworthy sample: route to the primary until it answers.
        this.latest = undefined;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}
