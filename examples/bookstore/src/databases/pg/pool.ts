import pg from 'pg';
import type { NodePool } from '../types.js';

/**
 * A small pool: the workload is sequential, so two connections per server are plenty and keep
 * the demo light on a shared machine. `max` is for the end-to-end benchmark (node-postgres'
 * own default is 10).
 */
export function smallPgPool(connectionString: string, max = 2): NodePool<pg.PoolClient> {
  const pool = new pg.Pool({ connectionString, max });
  // An idle client that loses its server (cluster teardown) must not crash the process.
  pool.on('error', () => undefined);
  return {
    use: (fn) => withClient(pool, fn),
    end: () => pool.end(),
  };
}

/** Run `fn` on one pooled connection and always give it back. */
async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no pool error listener; a server going away mid-query (teardown on
  // Ctrl-C) would otherwise crash the process. The query itself still rejects.
  let broken = false;
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    return await fn(client);
  } finally {
    client.off('error', onError);
    client.release(broken ? true : undefined);
  }
}
