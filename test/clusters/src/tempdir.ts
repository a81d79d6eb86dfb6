// Per-cluster temporary directories ("run dirs"): data directories, sockets and logs of every
// server of one cluster live in one directory that teardown deletes. Each run dir records the
// test process that owns it and the servers started in it, so a later run can stop servers and
// delete directories that a crashed (SIGKILLed) test process left behind. Nothing here knows
// about a database.

import {
  appendFileSync,
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import {
  chmod,
  chown,
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { basename, join } from 'node:path';
import { isAlive, onProcessExit, processTree, runCommand, waitForExit } from './process.js';
import type { Runtime, SystemUser } from './runtime.js';

const OWNER_FILE = '.tidemark-owner';
const PIDS_FILE = '.tidemark-pids';

export interface RunDir {
  /** The path as the servers see it (inside the runtime). */
  readonly inner: string;
  /** The same directory on the host. */
  readonly host: string;
  /** Remember a server started in this dir, for reaping after a crash. */
  recordPid(pid: number): void;
  /** Delete the directory. Idempotent. */
  remove(): Promise<void>;
}

/** Start time of a process in clock ticks since boot; with the pid it identifies one process. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

export async function createRunDir(
  runtime: Runtime,
  prefix: string,
  owner?: SystemUser,
): Promise<RunDir> {
  const host = await mkdtemp(join(runtime.hostPath(runtime.tempRoot), prefix));
  const inner = join(runtime.tempRoot, basename(host));
  await writeFile(
    join(host, OWNER_FILE),
    JSON.stringify({ pid: process.pid, start: startTime(process.pid) ?? null }),
  );
  if (owner) await chown(host, owner.uid, owner.gid);
  const unregister = onProcessExit(() => rmSync(host, { recursive: true, force: true }));
  let removed = false;
  return {
    inner,
    host,
    recordPid(pid) {
      appendFileSync(join(host, PIDS_FILE), `${pid}\n`);
    },
    async remove() {
      if (removed) return;
      removed = true;
      unregister();
      await rm(host, { recursive: true, force: true });
    },
  };
}

function ownerAlive(dir: string): boolean {
  try {
    const owner = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')) as {
      pid: number;
      start: string | null;
    };
    if (!isAlive(owner.pid)) return false;
    return owner.start === null || startTime(owner.pid) === owner.start;
  } catch {
    // No owner file yet: a directory being created right now. Leave it alone.
    return true;
  }
}

/** Does this process still run from inside `dir`? Guards against a reused pid. */
function belongsTo(pid: number, hostDir: string, innerDir: string): boolean {
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (cwd === hostDir || cwd.startsWith(`${hostDir}/`)) return true;
  } catch {
    // fall through to the command line
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(innerDir);
  } catch {
    return false;
  }
}

/**
 * Stop servers and delete run dirs with `prefix` whose owning test process is gone. `signal` is
 * what makes the server shut down by itself (SIGKILL follows after a grace period).
 */
export async function reapStaleRunDirs(
  runtime: Runtime,
  prefix: string,
  signal: NodeJS.Signals,
): Promise<string[]> {
  const rootHost = runtime.hostPath(runtime.tempRoot);
  let entries: string[];
  try {
    entries = readdirSync(rootHost);
  } catch {
    return [];
  }
  const reaped: string[] = [];
  for (const entry of entries) {
    if (!entry.startsWith(prefix)) continue;
    const host = join(rootHost, entry);
    if (ownerAlive(host)) continue;
    const inner = join(runtime.tempRoot, entry);
    const pidsFile = join(host, PIDS_FILE);
    const pids = existsSync(pidsFile)
      ? readFileSync(pidsFile, 'utf8').split('\n').filter(Boolean).map(Number)
      : [];
    const victims = pids.filter((pid) => isAlive(pid) && belongsTo(pid, host, inner));
    const trees = victims.flatMap((pid) => processTree(pid));
    for (const pid of victims) {
      try {
        process.kill(pid, signal);
      } catch {
        // gone
      }
    }
    const left = await waitForExit(trees, 5_000);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await waitForExit(left, 5_000);
    try {
      await rm(host, { recursive: true, force: true });
      reaped.push(host);
    } catch {
      // Another user's directory (we are not root): not ours to clean, and no reason to fail.
    }
  }
  return reaped;
}

/** Copy a directory tree keeping owners and modes (root copying another user's files). */
export async function copyTree(hostSource: string, hostTarget: string): Promise<void> {
  await runCommand({ command: 'cp', args: ['-a', hostSource, hostTarget] });
}

export interface LiveCopyOptions {
  /** Relative paths (from the source root) not copied at all. */
  readonly skip?: readonly string[];
  /** Relative directory paths created empty (their contents are not copied). */
  readonly emptyDirs?: readonly string[];
  /** Owner of every copied entry (when running as root). */
  readonly owner?: { readonly uid: number; readonly gid: number };
}

function missing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException).code === 'ENOENT';
}

/**
 * Copy a directory tree that a running server keeps changing (a base backup's file copy):
 * files that vanish while we copy are skipped, modes are kept, the owner is set when given.
 */
export async function copyLiveTree(
  hostSource: string,
  hostTarget: string,
  options: LiveCopyOptions = {},
): Promise<void> {
  const skip = new Set(options.skip ?? []);
  const emptyDirs = new Set(options.emptyDirs ?? []);
  const own = async (path: string) => {
    if (options.owner && process.getuid?.() === 0) {
      await chown(path, options.owner.uid, options.owner.gid);
    }
  };
  const walk = async (relative: string): Promise<void> => {
    const from = relative === '' ? hostSource : join(hostSource, relative);
    const to = relative === '' ? hostTarget : join(hostTarget, relative);
    let info: Awaited<ReturnType<typeof lstat>>;
    try {
      info = await lstat(from);
    } catch (error) {
      if (missing(error)) return;
      throw error;
    }
    if (info.isDirectory()) {
      await mkdir(to, { recursive: true });
      await chmod(to, info.mode & 0o7777);
      await own(to);
      if (emptyDirs.has(relative)) return;
      let entries: string[];
      try {
        entries = await readdir(from);
      } catch (error) {
        if (missing(error)) return;
        throw error;
      }
      for (const entry of entries) {
        const child = relative === '' ? entry : join(relative, entry);
        if (!skip.has(child)) await walk(child);
      }
    } else if (info.isSymbolicLink()) {
      await symlink(await readlink(from), to);
    } else if (info.isFile()) {
      try {
        await copyFile(from, to);
      } catch (error) {
        if (missing(error)) return;
        throw error;
      }
      await chmod(to, info.mode & 0o7777);
      await own(to);
    }
  };
  await walk('');
}
