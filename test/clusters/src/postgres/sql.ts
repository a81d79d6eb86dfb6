// SQL every PostgreSQL provider needs (local processes, external URLs, containers): one short-
// lived connection per call, so a node that was killed and restarted needs no pool repair.

import pg from 'pg';
import { pollUntilAccepting, redact, type WaitOptions } from '../accepting.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Run SQL on one server; rows of the last statement when the text holds several. */
export async function query(
  url: string,
  sql: string,
  connectTimeoutMs = 5_000,
): Promise<unknown[]> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: connectTimeoutMs,
  });
  // A server killed under an open connection emits 'error' on the client; without a listener
  // that would crash the test process.
  client.on('error', () => {});
  try {
    await client.connect();
    const result = (await client.query(sql)) as pg.QueryResult | pg.QueryResult[];
    const last = Array.isArray(result) ? result[result.length - 1] : result;
    return (last?.rows ?? []) as unknown[];
  } finally {
    await client.end().catch(() => {});
  }
}

export async function queryOne<T>(url: string, sql: string): Promise<T> {
  const rows = await query(url, sql);
  if (rows.length === 0) throw new Error(`no row from: ${sql}`);
  return rows[0] as T;
}

/** Poll until the server accepts a connection and answers a query (a hot standby counts). */
export function waitUntilAccepting(url: string, options: WaitOptions = {}): Promise<void> {
  return pollUntilAccepting(url, (u) => query(u, 'SELECT 1', 2_000), options);
}

/** Pause WAL replay on a replica and wait until the startup process has actually paused. */
export async function pauseReplay(url: string, timeoutMs = 10_000): Promise<void> {
  await query(url, 'SELECT pg_wal_replay_pause()');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { state } = await queryOne<{ state: string }>(
      url,
      'SELECT pg_get_wal_replay_pause_state() AS state',
    );
    if (state === 'paused') return;
    if (Date.now() > deadline)
      throw new Error(`replay pause state is still '${state}' after ${timeoutMs} ms`);
    await sleep(20);
  }
}

export async function resumeReplay(url: string): Promise<void> {
  await query(url, 'SELECT pg_wal_replay_resume()');
}

/** Primary: current WAL write position; replica: last replayed position. Both as text. */
export async function position(url: string): Promise<string> {
  const { lsn } = await queryOne<{ lsn: string }>(
    url,
    'SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text AS lsn',
  );
  return lsn;
}

export async function serverVersion(url: string): Promise<string> {
  const { server_version } = await queryOne<{ server_version: string }>(url, 'SHOW server_version');
  return server_version;
}

export async function inRecovery(url: string): Promise<boolean> {
  const { r } = await queryOne<{ r: boolean }>(url, 'SELECT pg_is_in_recovery() AS r');
  return r;
}

/**
 * Timeline of a primary. pg_control_checkpoint() lags until the next checkpoint after a
 * promotion; the WAL file name of the current position is immediate.
 */
export async function primaryTimeline(url: string): Promise<number> {
  const { f } = await queryOne<{ f: string }>(
    url,
    'SELECT pg_walfile_name(pg_current_wal_lsn()) AS f',
  );
  return Number.parseInt(f.slice(0, 8), 16);
}

export interface ReceiverState {
  status: string;
  receivedTli: number;
  senderPort: number | null;
}

/** The replica's WAL receiver, or undefined while it is not connected. */
export async function receiver(url: string): Promise<ReceiverState | undefined> {
  const rows = (await query(
    url,
    'SELECT status, received_tli, sender_port FROM pg_stat_wal_receiver',
  )) as { status: string; received_tli: number; sender_port: number | null }[];
  const row = rows[0];
  if (!row || row.status === null) return undefined;
  return { status: row.status, receivedTli: row.received_tli, senderPort: row.sender_port };
}

/**
 * Wait until a replica streams from the server on `senderPort` (if given) on at least `timeline`
 * (if given). Returns false on timeout instead of throwing, so callers can try harder (restart).
 */
export async function waitForStreaming(
  url: string,
  expect: { senderPort?: number; timeline?: number },
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  // Checked at least once, so a zero timeout means "is it streaming right now?".
  for (;;) {
    try {
      const state = await receiver(url);
      if (
        state &&
        state.status === 'streaming' &&
        (expect.senderPort === undefined || state.senderPort === expect.senderPort) &&
        (expect.timeline === undefined || state.receivedTli >= expect.timeline)
      ) {
        return true;
      }
    } catch {
      // restarting or briefly unreachable: keep polling
    }
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
}

/** Promote a standby and wait (server-side, up to 60 s) until it accepts writes. */
export async function promote(url: string): Promise<void> {
  const { ok } = await queryOne<{ ok: boolean }>(url, 'SELECT pg_promote(true, 60) AS ok');
  if (!ok) throw new Error(`pg_promote did not finish within 60 s on ${redact(url)}`);
}

/**
 * A non-exclusive base backup: pg_backup_start, `copy` (the caller copies the data directory),
 * pg_backup_stop, all on one connection as PostgreSQL requires. Returns what the copy needs
 * beside it: the backup label (and tablespace map, empty without tablespaces).
 */
export async function baseBackup(
  url: string,
  label: string,
  copy: () => Promise<void>,
): Promise<{ labelfile: string; spcmapfile: string }> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    // 15+ names; the suite's servers are 15, 18 and 19. fast = an immediate checkpoint.
    await client.query('SELECT pg_backup_start($1, true)', [label]);
    try {
      await copy();
    } catch (error) {
      await client.query('SELECT pg_backup_stop(false)').catch(() => {});
      throw error;
    }
    const result = await client.query<{ labelfile: string; spcmapfile: string | null }>(
      'SELECT labelfile, spcmapfile FROM pg_backup_stop(false)',
    );
    const row = result.rows[0];
    if (!row) throw new Error('pg_backup_stop returned no row');
    return { labelfile: row.labelfile, spcmapfile: row.spcmapfile ?? '' };
  } finally {
    await client.end().catch(() => {});
  }
}

export { redact, type WaitOptions };
