// Commands against one member over a direct connection, and pausing its oplog applier.
//
// UNTESTED HERE: no mongod on the machines this was written on. Only the order of the commands
// was checked, against a scripted stand-in (test/mongo-cluster.test.ts).
//
// Pausing replay uses the `rsSyncApplyStop` fail point (a test command: mongod must run with
// --setParameter enableTestCommands=1). Fail point names are internal and change between
// releases; what the server source says about this one:
// - defined in src/mongo/db/repl/initial_syncer.cpp ("Failpoint which stops the applier");
// - checked at the top of every loop of the oplog applier (oplog_applier_impl.cpp, log id 21229
//   "Oplog Applier - rsSyncApplyStop fail point enabled"), which then waits in pauseWhileSet(),
//   re-checking every 100 ms; in 4.2 it sat in the batcher (sync_tail.cpp OpQueueBatcher);
// - from 8.0 (featureFlagReduceMajorityWriteLatency) the oplog writer checks it too (log id
//   8543102), so a paused member keeps fetching into its in-memory buffer but no longer writes
//   to its own oplog either;
// - `stopReplProducer` (bgsync) is the other one in use: it stops fetching instead, which is not
//   what pauseReplay() means (the jstests' stopServerReplication moved from the first to it).

import { type Document, MongoClient, MongoServerError, type Timestamp } from 'mongodb';

/** Runs one command on the `admin` database of the member at a direct URL. */
export type AdminRunner = (url: string, command: Document, timeoutMs?: number) => Promise<Document>;

export interface Hello {
  isWritablePrimary?: boolean;
  secondary?: boolean;
  setName?: string;
  /** host:port of the primary this member knows of. */
  primary?: string;
  lastWrite?: { opTime?: { ts: Timestamp; t: unknown } };
}

/**
 * A fresh client per command: members are killed and restarted all the time, and a cached
 * client would first have to notice.
 */
export const runAdmin: AdminRunner = async (url, command, timeoutMs = 10_000) => {
  const client = new MongoClient(url, {
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
  });
  try {
    return await client.db('admin').command(command);
  } finally {
    await client.close().catch(() => {});
  }
};

export const APPLY_FAIL_POINT = 'rsSyncApplyStop';
const COMMAND_NOT_FOUND = 59;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function isCommandNotFound(err: unknown): boolean {
  return err instanceof MongoServerError && err.code === COMMAND_NOT_FOUND;
}

function failPointError(err: unknown, url: string): Error {
  if (!isCommandNotFound(err)) return err as Error;
  return new Error(
    `cannot pause replay on ${url}: configureFailPoint is not available, the server runs without test commands. Start every mongod with --setParameter enableTestCommands=1`,
  );
}

/**
 * Stop the member's oplog applier; resolves once the applier has reached the fail point, so
 * nothing written after this resolves is applied there until resumeApplier().
 */
export async function pauseApplier(run: AdminRunner, url: string): Promise<void> {
  let count: number;
  try {
    const reply = await run(url, { configureFailPoint: APPLY_FAIL_POINT, mode: 'alwaysOn' });
    count = Number(reply['count'] ?? 0);
  } catch (err) {
    throw failPointError(err, url);
  }
  try {
    // `count` is how often the fail point was entered so far: one more means it holds now.
    await run(
      url,
      { waitForFailPoint: APPLY_FAIL_POINT, timesEntered: count + 1, maxTimeMS: 30_000 },
      35_000,
    );
  } catch (err) {
    if (!isCommandNotFound(err)) throw err;
    // waitForFailPoint is 4.4+; the applier looks at the fail point at least once a second.
    await sleep(1_500);
  }
}

export async function resumeApplier(run: AdminRunner, url: string): Promise<void> {
  try {
    await run(url, { configureFailPoint: APPLY_FAIL_POINT, mode: 'off' });
  } catch (err) {
    throw failPointError(err, url);
  }
}
