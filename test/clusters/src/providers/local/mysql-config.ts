// Server configuration and first-start SQL of local MySQL/MariaDB nodes. Sized for a 2-core
// machine that runs several three-node clusters: small buffers, few connections.

import type { MysqlFlavour } from '../../mysql/dialect.js';

export const HOST = '127.0.0.1';
/** The user in the node URLs, and the one replicas replicate as (empty password). */
export const URL_USER = 'root';
/**
 * The harness's own account (empty password, 127.0.0.1 only). On MariaDB root loses
 * READ_ONLY ADMIN so that read_only stops it on replicas, and READ_ONLY ADMIN is also what
 * toggling read_only needs: the harness uses this account for everything it does itself.
 */
export const ADMIN_USER = 'tidemark_admin';
export const DATABASE = 'test';

// MySQL's performance_schema stays ON (replication_applier_status_by_worker is where adapters
// read replica lag), shrunk from about 390 MB of instrumentation per server to about 130 MB
// (history and digest tables, per-account tables, the error summary). Resident size per server
// went from 540 MB to 260 MB here.
const MYSQL_SETTINGS = `
mysqlx=OFF
skip-name-resolve
bind-address=${HOST}
secure-file-priv=NULL
max-connections=50
key-buffer-size=1M
table-open-cache=400
table-definition-cache=400
innodb-buffer-pool-size=32M
innodb-redo-log-capacity=32M
innodb-log-buffer-size=1M
performance-schema=ON
performance-schema-digests-size=200
performance-schema-max-digest-length=256
performance-schema-max-sql-text-length=256
performance-schema-events-statements-history-long-size=100
performance-schema-events-statements-history-size=5
performance-schema-events-stages-history-long-size=100
performance-schema-events-stages-history-size=5
performance-schema-events-transactions-history-long-size=100
performance-schema-events-transactions-history-size=5
performance-schema-events-waits-history-long-size=100
performance-schema-events-waits-history-size=5
performance-schema-error-size=100
performance-schema-accounts-size=20
performance-schema-hosts-size=20
performance-schema-users-size=20
performance-schema-max-thread-instances=200
performance-schema-max-table-instances=200
performance-schema-max-table-handles=200
performance-schema-max-file-instances=500
performance-schema-max-index-stat=500
performance-schema-max-table-lock-stat=200
`;

// MariaDB's performance_schema is OFF by default and stays so.
const MARIADB_SETTINGS = `
skip-name-resolve
bind-address=${HOST}
max-connections=50
key-buffer-size=1M
table-open-cache=400
table-definition-cache=400
innodb-buffer-pool-size=32M
innodb-log-file-size=32M
`;

/** Settings shared by every node and by the template a node's data directory is copied from. */
export function commonSettings(flavour: MysqlFlavour): string {
  return flavour === 'mysql' ? MYSQL_SETTINGS : MARIADB_SETTINGS;
}

export interface NodePaths {
  /** All paths as the server sees them (inside its runtime). */
  readonly dataDir: string;
  readonly socket: string;
  readonly pidFile: string;
}

/**
 * One node's option file. The server logs to stderr, which the harness appends to the node's
 * log file. Role-dependent options (read-only) go on the command line, so a promotion need
 * not rewrite this file.
 */
export function nodeConfig(
  flavour: MysqlFlavour,
  node: { serverId: number; port: number },
  paths: NodePaths,
): string {
  const replication =
    flavour === 'mysql'
      ? `
gtid-mode=ON
enforce-gtid-consistency=ON
log-bin=binlog
relay-log=relay
log-replica-updates=ON
skip-replica-start
relay-log-recovery=ON
replica-net-timeout=10
replica-parallel-workers=2
`
      : `
log-bin=binlog
relay-log=relay
log-slave-updates
gtid-strict-mode=ON
skip-slave-start
slave-net-timeout=10
`;
  return `# tidemark test cluster node
[mysqld]
datadir=${paths.dataDir}
socket=${paths.socket}
pid-file=${paths.pidFile}
port=${node.port}
server-id=${node.serverId}
report-host=${HOST}
report-port=${node.port}
${commonSettings(flavour).trim()}
${replication.trim()}
`;
}

/**
 * Run once when the template data directory is created. MySQL's --initialize-insecure makes
 * only root@localhost, which skip-name-resolve never matches for a TCP client on 127.0.0.1.
 * MariaDB's install makes root@127.0.0.1 with everything, including READ_ONLY ADMIN, which
 * would let it write on a read_only replica.
 */
export function initSql(flavour: MysqlFlavour): string {
  const admin = `CREATE USER '${ADMIN_USER}'@'${HOST}' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO '${ADMIN_USER}'@'${HOST}' WITH GRANT OPTION;
`;
  if (flavour === 'mysql') {
    return `CREATE USER '${URL_USER}'@'${HOST}' IDENTIFIED BY '';
GRANT ALL PRIVILEGES ON *.* TO '${URL_USER}'@'${HOST}' WITH GRANT OPTION;
${admin}`;
  }
  // mariadb-install-db runs this in bootstrap mode, where the grant tables are not loaded
  // until FLUSH PRIVILEGES (else CREATE USER fails as under --skip-grant-tables).
  return `FLUSH PRIVILEGES;
${admin}REVOKE READ_ONLY ADMIN ON *.* FROM '${URL_USER}'@'${HOST}';
`;
}
