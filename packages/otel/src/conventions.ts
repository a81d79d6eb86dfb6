/**
 * Attribute names. The `db.*`, `server.*` and `error.type` keys are OpenTelemetry's database
 * semantic conventions; the rest are Tidemark's own, for what those conventions do not cover.
 * None of them ever carries a token or a position: those are unbounded (cardinality) and can
 * identify a user's activity (privacy).
 */
export const ATTR = {
  dbSystemName: 'db.system.name',
  serverAddress: 'server.address',
  serverPort: 'server.port',
  errorType: 'error.type',
  cluster: 'tidemark.cluster',
  outcome: 'tidemark.route.outcome',
  reason: 'tidemark.route.reason',
  target: 'tidemark.route.target',
  waitDuration: 'tidemark.route.wait.duration',
  stale: 'tidemark.route.stale',
  retried: 'tidemark.route.retried',
  replica: 'tidemark.replica.id',
  waitResult: 'tidemark.wait.result',
  waitServerSide: 'tidemark.wait.server_side',
  lostWriteVerdict: 'tidemark.lost_write.verdict',
} as const;

/** Instrument names, stable once released: dashboards and alerts match on them. */
export const METRIC = {
  operationDuration: 'db.client.operation.duration',
  waitDuration: 'tidemark.wait.duration',
  capRejections: 'tidemark.fallback.cap_rejections',
  retries: 'tidemark.read.retries',
  badTokens: 'tidemark.tokens.bad',
  otherHistoryTokens: 'tidemark.tokens.other_history',
  historyUnverified: 'tidemark.history.unverified',
  lostWrites: 'tidemark.writes.lost',
  replicaLag: 'tidemark.replica.lag',
  replicaLagSize: 'tidemark.replica.lag.size',
  replicaStaleness: 'tidemark.replica.staleness',
  replicaSampleAge: 'tidemark.replica.applied_position.age',
  replicaReachable: 'tidemark.replica.reachable',
  replicaHealthy: 'tidemark.replica.healthy',
  replicaPaused: 'tidemark.replica.paused',
} as const;

/**
 * Bucket boundaries (seconds) the database semantic conventions recommend for
 * `db.client.operation.duration`.
 */
export const DB_OPERATION_DURATION_BUCKETS: readonly number[] = [
  0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10,
];

/**
 * Buckets for `tidemark.wait.duration` (seconds). Waits are bounded by the router's wait budget
 * (250 ms by default), so the resolution sits below one second.
 */
export const WAIT_DURATION_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

/** `db.system.name` values of the databases Tidemark has adapters for. */
export type DbSystemName = 'postgresql' | 'mysql' | 'mariadb' | 'mongodb';

/** Every {@link DbSystemName}, for validation and iteration. */
export const DB_SYSTEM_NAMES: readonly DbSystemName[] = [
  'postgresql',
  'mysql',
  'mariadb',
  'mongodb',
];

/**
 * `error.type` of a failed read: the stable Tidemark code when there is one, else the error's
 * class name. Never the message: messages may quote input.
 */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('TIDEMARK_')) return code;
    const name = (error as { name?: unknown }).name;
    if (typeof name === 'string' && name !== '' && name !== 'Error') return name;
  }
  return '_OTHER';
}
