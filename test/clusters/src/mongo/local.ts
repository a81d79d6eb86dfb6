// The local provider's MongoDB cluster: one mongod child process per member, from the binary in
// TIDEMARK_MONGOD, data directories and logs in one run directory. UNTESTED HERE: no mongod on
// the machines this was written on; only available() and start() with a failing binary ran.

import { readFileSync } from 'node:fs';
import { access, constants, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePorts } from '../ports.js';
import { killTree, runCommand, type ServerProcess, waitForExit } from '../process.js';
import { hostRuntime } from '../runtime.js';
import { createRunDir, type RunDir, reapStaleRunDirs } from '../tempdir.js';
import { type Availability, type Cluster, DEFAULT_REPLICAS, type StartOptions } from '../types.js';
import { MONGOD_ENV, mongodArgs, nothingConfigured, parseMongodVersion } from './commands.js';
import { type MemberProcess, MongoReplicaSet, makeMember } from './replica-set.js';

export const RUN_DIR_PREFIX = 'tidemark-mongo-';
const HOST = '127.0.0.1';
let clusters = 0;

/** Members a cluster gets: the primary plus `replicas` (at most 7 voting members). */
export function memberCount(options: StartOptions): number {
  const replicas = options.replicas ?? DEFAULT_REPLICAS;
  if (!Number.isInteger(replicas) || replicas < 0 || replicas > 6)
    throw new Error(`replicas must be an integer from 0 to 6 for MongoDB, got ${replicas}`);
  return replicas + 1;
}

/** A replica-set name no other cluster of this machine uses. */
export function uniqueSetName(): string {
  return `tidemark-${process.pid}-${++clusters}`;
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return `(no log at ${file})`;
  }
}

function localProcess(bin: string, args: string[], logFile: string, runDir: RunDir): MemberProcess {
  let proc: ServerProcess | undefined;
  return {
    async start() {
      proc = hostRuntime.spawn(bin, args, logFile, { emergencySignal: 'SIGKILL' });
      runDir.recordPid(proc.pid);
    },
    async kill() {
      if (!proc?.running()) return;
      await killTree(proc.pid);
      await proc.exited; // so that running() is false when we return
    },
    async exited(ms) {
      if (!proc) return true;
      if ((await waitForExit([proc.pid], ms)).length > 0) return false;
      await proc.exited;
      return true;
    },
    running: () => proc?.running() ?? false,
    context: () => `${logFile}:\n${tail(logFile)}`,
  };
}

export const localMongo = {
  async available(): Promise<Availability> {
    const bin = process.env[MONGOD_ENV]?.trim();
    if (!bin) return { ok: false, reason: nothingConfigured(`${MONGOD_ENV} is not set`) };
    try {
      await access(bin, constants.X_OK);
    } catch {
      return { ok: false, reason: `${MONGOD_ENV}=${bin} is not an executable file` };
    }
    try {
      const { stdout } = await runCommand({ command: bin, args: ['--version'] }, 30_000);
      if (!parseMongodVersion(stdout))
        return {
          ok: false,
          reason: `${bin} --version printed no "db version" line: is it mongod?`,
        };
    } catch (err) {
      return { ok: false, reason: `${MONGOD_ENV}=${bin} does not run: ${(err as Error).message}` };
    }
    return { ok: true };
  },

  async start(options: StartOptions = {}): Promise<Cluster> {
    const bin = process.env[MONGOD_ENV]?.trim();
    if (!bin) throw new Error(nothingConfigured(`${MONGOD_ENV} is not set`));
    const count = memberCount(options);
    // Data is thrown away: SIGKILL is the right way to stop what a crashed test process left.
    await reapStaleRunDirs(hostRuntime, RUN_DIR_PREFIX, 'SIGKILL');
    const runDir = await createRunDir(hostRuntime, RUN_DIR_PREFIX);
    const setName = uniqueSetName();
    const members = (await freePorts(count, HOST)).map((port, i) => {
      const dbPath = join(runDir.host, `n${i}`);
      const args = mongodArgs({ setName, port, dbPath });
      const proc = localProcess(bin, args, join(runDir.host, `n${i}.log`), runDir);
      return makeMember(i, `${HOST}:${port}`, setName, proc);
    });
    const cluster = new MongoReplicaSet('mongo', members, async () => {
      await Promise.all(members.map((m) => m.proc.kill().catch(() => {})));
      await runDir.remove();
    });
    try {
      for (const m of members) {
        await mkdir(join(runDir.host, m.node.name));
        await m.proc.start();
      }
      await cluster.initiate(setName);
      return cluster;
    } catch (err) {
      await cluster.teardown().catch(() => {});
      throw err;
    }
  },
};
