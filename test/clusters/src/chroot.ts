// Chroots as a runtime for server binaries built for a newer Debian than the host (sid and
// experimental packages on bookworm). The chroot is built once, by a shell script under
// scripts/setup (so a fresh machine's setup step and the harness share one recipe), into the
// tidemark cache directory. Servers run inside it as an unprivileged user and share the host's
// network, so the harness connects to them on 127.0.0.1. Nothing here knows about a database.

import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand, spawnServer } from './process.js';
import { baseEnv, lookupUser, type RunOptions, type Runtime, type SystemUser } from './runtime.js';

export function cacheDir(): string {
  return process.env['TIDEMARK_CACHE_DIR'] || join(homedir(), '.cache', 'tidemark');
}

export function chrootDir(name: string): string {
  return join(cacheDir(), `chroot-${name}`);
}

/** scripts/setup of this repository (this file is test/clusters/src/chroot.ts). */
export function setupScriptsDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'setup');
}

export interface ChrootBuild {
  /** Name of the chroot: the directory is `<cache>/chroot-<name>`. */
  name: string;
  /** Script that builds it (idempotent, atomic, locked); run with bash. */
  script: string;
  args?: readonly string[];
  /** Building takes minutes (debootstrap + apt). */
  timeoutMs?: number;
}

/** Why a chroot cannot be built here, or undefined if it can (or already exists). */
export function chrootUnavailableReason(build: ChrootBuild): string | undefined {
  if (existsSync(chrootDir(build.name))) return undefined;
  if (process.platform !== 'linux') return 'chroots need Linux';
  if (process.getuid?.() !== 0) {
    return `chroot ${chrootDir(build.name)} is missing and building it needs root (run ${build.script} as root)`;
  }
  if (!existsSync(build.script)) return `build script ${build.script} not found`;
  return undefined;
}

const building = new Map<string, Promise<string>>();

/**
 * The chroot's directory, building it first if it is missing. The script itself locks and builds
 * atomically, so concurrent test processes are safe; within one process we also share the promise.
 */
export function ensureChroot(build: ChrootBuild): Promise<string> {
  const dir = chrootDir(build.name);
  if (existsSync(dir)) return Promise.resolve(dir);
  let pending = building.get(build.name);
  if (!pending) {
    pending = (async () => {
      const reason = chrootUnavailableReason(build);
      if (reason) throw new Error(reason);
      await runCommand(
        {
          command: 'bash',
          args: [build.script, ...(build.args ?? [])],
          env: {
            ...baseEnv(undefined),
            HOME: homedir(),
            TIDEMARK_CACHE_DIR: cacheDir(),
            ...(process.env['TIDEMARK_DEBIAN_MIRROR']
              ? { TIDEMARK_DEBIAN_MIRROR: process.env['TIDEMARK_DEBIAN_MIRROR'] }
              : {}),
          },
        },
        build.timeoutMs ?? 20 * 60_000,
      );
      if (!existsSync(dir)) throw new Error(`${build.script} finished but ${dir} does not exist`);
      return dir;
    })().finally(() => building.delete(build.name));
    building.set(build.name, pending);
  }
  return pending;
}

function isMountPoint(path: string): boolean {
  try {
    const target = realpathSync(path);
    return readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .some((line) => line.split(' ')[1] === target);
  } catch {
    return false;
  }
}

/**
 * A tmpfs on the chroot's /dev/shm, mounted once and left mounted (it holds nothing between
 * clusters, and costs no memory while empty). Servers' data directories there are quicker to
 * create and copy than on disk (initdb: 1.1 s against 1.7 s here), and POSIX shared memory
 * inside the chroot lands on a real tmpfs. Returns false (use the disk) if mounting fails or
 * TIDEMARK_CHROOT_TMPFS=0.
 */
export async function ensureChrootTmpfs(root: string): Promise<boolean> {
  if (process.env['TIDEMARK_CHROOT_TMPFS'] === '0') return false;
  const dir = join(root, 'dev', 'shm');
  if (isMountPoint(dir)) return true;
  try {
    await runCommand({
      command: 'mount',
      args: ['-t', 'tmpfs', '-o', 'mode=1777,nosuid,nodev', 'tidemark-shm', dir],
    });
    return true;
  } catch {
    return false;
  }
}

/** Runs programs inside `root` with chroot(8); the program keeps chroot's PID (chroot execs it). */
export class ChrootRuntime implements Runtime {
  readonly description: string;

  /** `tempRoot`: /dev/shm when ensureChrootTmpfs() mounted it, else the chroot's disk. */
  constructor(
    readonly root: string,
    readonly tempRoot = '/var/tmp',
  ) {
    this.description = `chroot ${root}`;
  }

  hostPath(innerPath: string): string {
    return join(this.root, innerPath);
  }

  async ensureUser(name: string): Promise<SystemUser> {
    const passwd = join(this.root, 'etc', 'passwd');
    const found = lookupUser(passwd, name);
    if (found) return found;
    await runCommand({
      command: 'chroot',
      args: [
        this.root,
        'useradd',
        '--system',
        '--user-group',
        '--no-create-home',
        '--home-dir',
        '/nonexistent',
        '--shell',
        '/usr/sbin/nologin',
        name,
      ],
      env: baseEnv(undefined),
    });
    const created = lookupUser(passwd, name);
    if (!created)
      throw new Error(`useradd ${name} in ${this.root} succeeded but the user is missing`);
    return created;
  }

  private args(command: string, args: readonly string[], options: RunOptions): string[] {
    if (options.cwd !== undefined) {
      throw new Error('ChrootRuntime does not support cwd (chroot(8) always starts in /)');
    }
    // Numeric ids: chroot(8) would otherwise look the name up in the host's passwd, whose ids
    // need not match the chroot's.
    const user = options.user
      ? [`--userspec=${options.user.uid}:${options.user.gid}`, `--groups=${options.user.gid}`]
      : [];
    return [...user, this.root, command, ...args];
  }

  run(command: string, args: readonly string[], options: RunOptions = {}) {
    return runCommand(
      {
        command: 'chroot',
        args: this.args(command, args, options),
        env: baseEnv(options.user, options.env),
      },
      options.timeoutMs,
    );
  }

  spawn(
    command: string,
    args: readonly string[],
    logFile: string,
    options: RunOptions & { emergencySignal?: NodeJS.Signals } = {},
  ) {
    return spawnServer(
      {
        command: 'chroot',
        args: this.args(command, args, options),
        env: baseEnv(options.user, options.env),
      },
      logFile,
      options.emergencySignal,
    );
  }
}
