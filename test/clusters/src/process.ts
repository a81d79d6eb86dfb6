// Process helpers shared by every local provider (PostgreSQL now, MySQL/MariaDB later): start a
// long-running server as a child, run a command to completion, find a process's children, and
// make sure nothing we started outlives the test process. Nothing here knows about a database.

import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

export interface SpawnSpec {
  command: string;
  args: readonly string[];
  env?: Record<string, string>;
  cwd?: string;
  uid?: number;
  gid?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  readonly pid: number;
  /** Resolves when the process has exited and been reaped. Never rejects. */
  readonly exited: Promise<ExitInfo>;
  running(): boolean;
  signal(signal: NodeJS.Signals): void;
}

// Servers started by this process that have not exited yet, with the signal that makes each one
// shut down by itself once we are gone (for PostgreSQL: SIGQUIT, an immediate shutdown that also
// releases its SysV shared memory, which SIGKILL would leak).
const live = new Map<number, NodeJS.Signals>();
let handlersInstalled = false;

function emergencyStop(): void {
  for (const [pid, signal] of live) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
  live.clear();
}

const cleanups = new Set<() => void>();

/** Register a synchronous clean-up (e.g. remove a temp dir) run when the process exits without having undone it. */
export function onProcessExit(fn: () => void): () => void {
  installExitHandlers();
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

function runCleanups(): void {
  emergencyStop();
  for (const fn of cleanups) {
    try {
      fn();
    } catch {
      // best effort: the process is going away
    }
  }
  cleanups.clear();
}

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', runCleanups);
  // Only take over a signal nobody else handles (a test runner may have its own handler), and
  // re-raise it afterwards so the process still dies the way it was asked to.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    if (process.listenerCount(sig) > 0) continue;
    process.once(sig, () => {
      runCleanups();
      process.kill(process.pid, sig);
    });
  }
}

/**
 * Start a long-running server as a child process, stdout and stderr appended to `logFile`.
 * Not detached: if the test process's terminal sends SIGINT, the server gets it too.
 * The child is unref'd so a forgotten cluster cannot keep the test process alive; the exit
 * handlers still stop it.
 */
export function spawnServer(
  spec: SpawnSpec,
  logFile: string,
  emergencySignal: NodeJS.Signals = 'SIGKILL',
): ServerProcess {
  installExitHandlers();
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(spec.command, [...spec.args], {
      stdio: ['ignore', fd, fd],
      env: spec.env ?? {},
      ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      ...(spec.uid !== undefined ? { uid: spec.uid } : {}),
      ...(spec.gid !== undefined ? { gid: spec.gid } : {}),
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    throw new Error(`could not start ${spec.command}: no pid (see ${logFile})`);
  }
  let done = false;
  live.set(pid, emergencySignal);
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      live.delete(pid);
      resolve({ code, signal });
    });
    child.once('error', () => {
      done = true;
      live.delete(pid);
      resolve({ code: null, signal: null });
    });
  });
  child.unref();
  return {
    pid,
    exited,
    running: () => !done,
    signal: (signal) => {
      if (done) return;
      try {
        process.kill(pid, signal);
      } catch {
        // exited between the check and the kill
      }
    },
  };
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run a command to completion. Rejects with its output if it fails or runs past `timeoutMs`. */
export function runCommand(spec: SpawnSpec, timeoutMs = 120_000): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(spec.command, [...spec.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: spec.env ?? { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
      ...(spec.uid !== undefined ? { uid: spec.uid } : {}),
      ...(spec.gid !== undefined ? { gid: spec.gid } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const describe = () => `${spec.command} ${spec.args.join(' ')}`;
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${describe()}: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve({ code, stdout, stderr });
        return;
      }
      const why = signal ? `killed by ${signal}` : `exit code ${code}`;
      const output = (stderr.trim() || stdout.trim()).split('\n').slice(-20).join('\n');
      reject(new Error(`${describe()} failed (${why})${output ? `:\n${output}` : ''}`));
    });
  });
}

/** Process state letter from /proc, or undefined if there is no such process. */
function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself contain spaces or parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/**
 * True while the process exists and is not a zombie. An orphan that exits stays a zombie until
 * PID 1 reaps it (about 2 s in these containers); for us it is gone.
 */
export function isAlive(pid: number): boolean {
  const state = procState(pid);
  if (state === undefined) {
    if (process.platform === 'linux') return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  return state !== 'Z' && state !== 'X';
}

/** Direct children of `pid`, from /proc (Linux only; empty elsewhere). */
export function childPids(pid: number): number[] {
  const result: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return result;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) result.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return result;
}

/** `pid` and all its descendants that are alive now. */
export function processTree(pid: number): number[] {
  const seen: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (!isAlive(next) || seen.includes(next)) continue;
    seen.push(next);
    queue.push(...childPids(next));
  }
  return seen;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Wait until none of `pids` is alive. Returns the ones still alive at the deadline. */
export async function waitForExit(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < deadline) {
    await sleep(20);
    alive = alive.filter(isAlive);
  }
  return alive;
}

/** SIGKILL a process and every descendant at once, then wait until all are gone. */
export async function killTree(pid: number, timeoutMs = 10_000): Promise<void> {
  const tree = processTree(pid);
  for (const p of tree) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const left = await waitForExit(tree, timeoutMs);
  if (left.length > 0) throw new Error(`processes ${left.join(', ')} survived SIGKILL`);
}

/**
 * Ask a server to stop with `signal`, wait for it, and SIGKILL it (and its children) if it has
 * not exited after `graceMs`. Also waits for the children it leaves behind.
 */
export async function stopServer(
  proc: ServerProcess,
  signal: NodeJS.Signals,
  graceMs = 30_000,
): Promise<void> {
  const tree = processTree(proc.pid);
  if (!proc.running()) {
    await waitForExit(tree, graceMs);
    return;
  }
  proc.signal(signal);
  // The grace timer is cleared once the server exits, so a finished teardown does not keep the
  // calling process alive for the rest of the grace period.
  let graceTimer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = await Promise.race([
    proc.exited.then(() => false),
    new Promise<boolean>((resolve) => {
      graceTimer = setTimeout(() => resolve(true), graceMs);
    }),
  ]);
  clearTimeout(graceTimer);
  if (timedOut) {
    await killTree(proc.pid);
    await proc.exited;
  }
  const left = await waitForExit(tree, graceMs);
  for (const p of left) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await waitForExit(left, 5_000);
}

/**
 * Remove SysV shared memory segments created by any of `creatorPids` that nobody is attached to
 * any more. A server killed with SIGKILL cannot remove its own segment; checking the creator pid
 * and the attach count keeps us from touching anyone else's.
 */
export async function removeOrphanedSysvShm(creatorPids: ReadonlySet<number>): Promise<number> {
  if (creatorPids.size === 0) return 0;
  let table: string;
  try {
    table = readFileSync('/proc/sysvipc/shm', 'utf8');
  } catch {
    return 0;
  }
  const [header, ...lines] = table.trim().split('\n');
  const columns = (header ?? '').trim().split(/\s+/);
  const at = (name: string) => columns.indexOf(name);
  let removed = 0;
  for (const line of lines) {
    const f = line.trim().split(/\s+/);
    const shmid = f[at('shmid')];
    if (!creatorPids.has(Number(f[at('cpid')])) || Number(f[at('nattch')]) !== 0 || !shmid)
      continue;
    try {
      await runCommand({ command: 'ipcrm', args: ['-m', shmid] });
      removed++;
    } catch {
      // removed concurrently
    }
  }
  return removed;
}

/**
 * POSIX shared memory files (under some /dev/shm, a chroot's included) mapped by any of `pids`,
 * as host paths. A server killed with SIGKILL cannot unlink them; read this before the kill.
 */
export function sharedMemoryFiles(pids: readonly number[]): string[] {
  const files = new Set<string>();
  for (const pid of pids) {
    let maps: string;
    try {
      maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
    } catch {
      continue;
    }
    for (const line of maps.split('\n')) {
      const path = line.slice(line.indexOf('/'));
      if (line.includes('/') && path.includes('/dev/shm/') && !path.endsWith('(deleted)')) {
        files.add(path);
      }
    }
  }
  return [...files];
}

/** A process tree stopped with SIGSTOP; {@link FrozenTree.thaw} continues it. */
export interface FrozenTree {
  readonly pids: readonly number[];
  thaw(): void;
}

function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
}

/**
 * SIGSTOP a process and every descendant: alive, its listening socket still completes TCP
 * handshakes (the kernel does that), but nothing answers. The root first, so it forks nothing
 * new while its children are stopped. If the test process exits while the tree is stopped, an
 * exit handler continues it, so the shutdown signal it gets from there can take effect.
 */
export function freezeTree(pid: number): FrozenTree {
  signalAll([pid], 'SIGSTOP');
  const pids = processTree(pid);
  signalAll(pids, 'SIGSTOP');
  let thawed = false;
  const unregister = onProcessExit(() => signalAll(processTree(pid).concat(pids), 'SIGCONT'));
  return {
    pids,
    thaw() {
      if (thawed) return;
      thawed = true;
      unregister();
      // Children first, so the root finds them running when it continues.
      const now = [...new Set([...processTree(pid), ...pids])].reverse();
      signalAll(now, 'SIGCONT');
    },
  };
}

/** True when the process is stopped (state T) right now (Linux). */
export function isStopped(pid: number): boolean {
  return procState(pid) === 'T';
}
