import { startCluster } from '@tidemark/test-clusters';
import type mysql from 'mysql2/promise';
import { DemoError, DemoErrorCode } from '../../errors.js';
import { describeError, redact, sleep } from '../text.js';
import type { DemoCluster } from '../types.js';
import type { MysqlFamilyFlavour } from './flavour.js';
import { DROP_DATABASE_SQL, RESET_ORDERS_STATEMENTS } from './orders.js';
import { queryRows, withMysqlConnection } from './pool.js';

/** The script that installs the local MySQL 9.7 and MariaDB 10.11 servers. */
export const SETUP_SCRIPT = 'scripts/setup/mysql.sh';

/**
 * Start the harness's local primary and one replica of this flavour (`mysql97`: MySQL 9.7 in a
 * Debian sid chroot, root needed; `mariadb1011`: the host's MariaDB 10.11). Replicas follow with
 * GTID auto-positioning; pausing stops the replica's SQL/applier thread.
 */
export async function startLocalMysqlCluster(flavour: MysqlFamilyFlavour): Promise<DemoCluster> {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  try {
    cluster = await startCluster(flavour.target, { replicas: 1, provider: 'local' });
  } catch (error) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not start the local ${flavour.product} cluster (harness target ${flavour.target}): ${describeError(error)}. Install the servers with \`sudo bash ${SETUP_SCRIPT}\` (from the repository root), or point the demo at your own cluster with --primary-url and --replica-url.`,
      { cause: error },
    );
  }
  const replica = cluster.replicas()[0];
  if (!replica) {
    await cluster.teardown();
    throw new DemoError(DemoErrorCode.Cluster, 'The harness started a cluster without a replica.');
  }
  return withDataControls(flavour, {
    description: `local ${flavour.product} ${cluster.version} (harness target ${flavour.target}), primary ${cluster.primary().host}:${cluster.primary().port}, replica ${replica.host}:${replica.port}`,
    primaryUrl: cluster.primary().url,
    replicaUrl: replica.url,
    pauseReplay: () => cluster.pauseReplay(replica.name),
    resumeReplay: () => cluster.resumeReplay(replica.name),
    close: () => cluster.teardown(),
  });
}

/**
 * Use the caller's own primary and replica (mysql:// URLs). The demo checks the flavour and that
 * only the replica is configured as a replica (`SHOW REPLICA STATUS`, which needs REPLICATION
 * CLIENT / SLAVE MONITOR). Pausing runs STOP REPLICA SQL_THREAD (MariaDB: STOP SLAVE SQL_THREAD)
 * on the replica, which needs REPLICATION_SLAVE_ADMIN / REPLICATION SLAVE ADMIN (or SUPER).
 */
export async function connectExternalMysqlCluster(
  flavour: MysqlFamilyFlavour,
  primaryUrl: string,
  replicaUrl: string,
): Promise<DemoCluster> {
  const [primary, replica] = await Promise.all([
    inspect(flavour, primaryUrl, 'primary'),
    inspect(flavour, replicaUrl, 'replica'),
  ]);
  for (const [node, flag] of [
    [primary, '--primary-url'],
    [replica, '--replica-url'],
  ] as const) {
    if (!flavour.matchesVersion(node.version)) {
      throw new DemoError(
        DemoErrorCode.Cluster,
        `${flag} points at ${node.version}, which is not ${flavour.product}; pass --db ${flavour.db === 'mysql' ? 'mariadb' : 'mysql'} for it.`,
      );
    }
  }
  if (primary.isReplica) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `--primary-url points at a server configured as a replica (${flavour.replicaStatusSql} returned a row); give the primary there.`,
    );
  }
  if (!replica.isReplica) {
    throw new DemoError(
      DemoErrorCode.Cluster,
      `--replica-url points at a server that is not configured as a replica (${flavour.replicaStatusSql} returned nothing); give a replica of --primary-url.`,
    );
  }
  // Someone else's replica must not stay paused because the demo was interrupted (Ctrl-C).
  let paused = false;
  return withDataControls(flavour, {
    description: `your cluster: ${flavour.product} ${primary.version}, primary ${redact(primaryUrl)}, replica ${redact(replicaUrl)}`,
    primaryUrl,
    replicaUrl,
    pauseReplay: async () => {
      paused = true;
      await controlApplier(flavour, replicaUrl, 'stop');
    },
    resumeReplay: async () => {
      await controlApplier(flavour, replicaUrl, 'start');
      paused = false;
    },
    close: async () => {
      if (paused) await controlApplier(flavour, replicaUrl, 'start').catch(() => undefined);
    },
  });
}

type ClusterControls = Omit<DemoCluster, 'resetOrders' | 'waitForReplicaCatchUp' | 'dropDemoData'>;

/** Add the database and catch-up operations, the same for local and external clusters. */
function withDataControls(flavour: MysqlFamilyFlavour, cluster: ClusterControls): DemoCluster {
  const complete: DemoCluster = {
    ...cluster,
    resetOrders: async () => {
      await connect(cluster.primaryUrl, 'primary', async (connection) => {
        for (const statement of RESET_ORDERS_STATEMENTS) await connection.query(statement);
      });
      await waitForReplicaCatchUp(flavour, cluster);
    },
    waitForReplicaCatchUp: (timeoutMs) => waitForReplicaCatchUp(flavour, cluster, timeoutMs),
    dropDemoData: async () => {
      await connect(cluster.primaryUrl, 'primary', (connection) =>
        connection.query(DROP_DATABASE_SQL),
      );
    },
  };
  return complete;
}

/**
 * Wait until the replica has applied everything the primary has committed so far, so one run's
 * setup or backlog never leaks into the next run. Waits server-side, a second at a time.
 */
async function waitForReplicaCatchUp(
  flavour: MysqlFamilyFlavour,
  cluster: ClusterControls,
  timeoutMs = 30_000,
): Promise<void> {
  const position = await connect(cluster.primaryUrl, 'primary', (connection) =>
    flavour.primaryPosition(connection),
  );
  const deadline = Date.now() + timeoutMs;
  await connect(cluster.replicaUrl, 'replica', async (connection) => {
    for (;;) {
      const remaining = (deadline - Date.now()) / 1000;
      if (await flavour.waitApplied(connection, position, Math.min(1, remaining))) return;
      if (Date.now() >= deadline) {
        throw new DemoError(
          DemoErrorCode.CatchUp,
          `The replica did not apply ${position.replace(/\s+/g, '')} within ${timeoutMs / 1000} s. Check that its SQL/applier thread runs (${flavour.startApplierSql}) and that replication is running (${flavour.replicaStatusSql}).`,
        );
      }
    }
  });
}

async function controlApplier(
  flavour: MysqlFamilyFlavour,
  replicaUrl: string,
  action: 'stop' | 'start',
): Promise<void> {
  await connect(replicaUrl, 'replica', async (connection) => {
    try {
      await connection.query(action === 'stop' ? flavour.stopApplierSql : flavour.startApplierSql);
    } catch (error) {
      throw new DemoError(
        DemoErrorCode.ReplayControl,
        `Could not ${action} the SQL/applier thread on the replica (${describeError(error)}). The paused scenario needs ${flavour.applierPrivilege} for the user in --replica-url; or run only --scenario idle.`,
        { cause: error },
      );
    }
    // Resolve only once the applier really is in the requested state.
    const want = action === 'stop' ? 'No' : 'Yes';
    const deadline = Date.now() + 10_000;
    for (;;) {
      const [status] = await queryRows(connection, flavour.replicaStatusSql);
      if (String(status?.[flavour.applierRunningColumn]) === want) return;
      if (Date.now() > deadline) {
        throw new DemoError(
          DemoErrorCode.ReplayControl,
          `The replica's SQL/applier thread did not ${action} within 10 s; check ${flavour.replicaStatusSql} on it${action === 'stop' ? ` and run ${flavour.startApplierSql} when done` : ''}.`,
        );
      }
      await sleep(10);
    }
  });
}

async function inspect(
  flavour: MysqlFamilyFlavour,
  url: string,
  role: 'primary' | 'replica',
): Promise<{ version: string; isReplica: boolean }> {
  return connect(url, role, async (connection) => {
    const [row] = await queryRows(connection, 'SELECT VERSION() AS v');
    let status: Record<string, unknown>[];
    try {
      status = await queryRows(connection, flavour.replicaStatusSql);
    } catch (error) {
      throw new DemoError(
        DemoErrorCode.Cluster,
        `${flavour.replicaStatusSql} failed on the ${role} (${describeError(error)}); the user in the URL needs ${flavour.statusPrivilege}.`,
        { cause: error },
      );
    }
    return { version: String(row?.['v'] ?? 'unknown version'), isReplica: status.length > 0 };
  });
}

async function connect<T>(
  url: string,
  role: 'primary' | 'replica',
  fn: (connection: mysql.Connection) => Promise<T>,
): Promise<T> {
  let opened = false;
  try {
    return await withMysqlConnection(url, (connection) => {
      opened = true;
      return fn(connection);
    });
  } catch (error) {
    if (opened) throw error;
    throw new DemoError(
      DemoErrorCode.Cluster,
      `Could not connect to the ${role} at ${redact(url)} (${describeError(error)}).`,
      { cause: error },
    );
  }
}
