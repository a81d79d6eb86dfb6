// Where a server's binaries run: directly on the host, or inside a chroot (for binaries that need
// a newer glibc than the host has). Paths given to a runtime are as the server sees them
// ("inner" paths); hostPath() maps them to the host's view so the harness can write config files,
// copy data directories and delete them. Nothing here knows about a database.

import { existsSync, readFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import {
  type CommandResult,
  runCommand,
  type ServerProcess,
  type SpawnSpec,
  spawnServer,
} from './process.js';

export interface SystemUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

export interface RunOptions {
  /** Run as this user (resolved inside the runtime); default: the current user. */
  user?: SystemUser;
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}

export interface Runtime {
  /** For messages: 'host' or 'chroot /path'. */
  readonly description: string;
  /** The host path of a path as seen inside the runtime. */
  hostPath(innerPath: string): string;
  /** A directory, as seen inside the runtime, where servers may keep temporary data. */
  readonly tempRoot: string;
  /** Look up a system user inside the runtime, creating it (with its own group) if missing. */
  ensureUser(name: string): Promise<SystemUser>;
  run(command: string, args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  spawn(
    command: string,
    args: readonly string[],
    logFile: string,
    options?: RunOptions & { emergencySignal?: NodeJS.Signals },
  ): ServerProcess;
}

export const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Parse a passwd file for one user. */
export function lookupUser(passwdFile: string, name: string): SystemUser | undefined {
  if (!existsSync(passwdFile)) return undefined;
  for (const line of readFileSync(passwdFile, 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 7) {
      return { name, uid: Number(f[2]), gid: Number(f[3]), home: f[5] ?? '/' };
    }
  }
  return undefined;
}

export function baseEnv(user: SystemUser | undefined, extra?: Record<string, string>) {
  return {
    PATH: BASE_PATH,
    LANG: 'C',
    LC_ALL: 'C',
    TZ: 'UTC',
    ...(user ? { HOME: user.home, USER: user.name, LOGNAME: user.name } : {}),
    ...extra,
  };
}

/** Prefer tmpfs: data directories there make initdb and copies fast, and nothing must survive. */
function hostTempRoot(): string {
  const override = process.env['TIDEMARK_TMPDIR'];
  if (override) return override;
  return existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
}

class HostRuntime implements Runtime {
  readonly description = 'host';
  readonly tempRoot = hostTempRoot();

  hostPath(innerPath: string): string {
    return innerPath;
  }

  async ensureUser(name: string): Promise<SystemUser> {
    // Not root: we cannot switch users, and need not (only root is refused by servers like
    // PostgreSQL), so servers run as whoever runs the tests.
    if (process.getuid?.() !== 0) {
      const me = userInfo();
      return { name: me.username, uid: me.uid, gid: me.gid, home: me.homedir };
    }
    const found = lookupUser('/etc/passwd', name);
    if (found) return found;
    await runCommand({
      command: 'useradd',
      args: [
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
    const created = lookupUser('/etc/passwd', name);
    if (!created) throw new Error(`useradd ${name} succeeded but the user is not in /etc/passwd`);
    return created;
  }

  private spec(command: string, args: readonly string[], options: RunOptions): SpawnSpec {
    return {
      command,
      args,
      env: baseEnv(options.user, options.env),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      ...(options.user && options.user.uid !== process.getuid?.()
        ? { uid: options.user.uid, gid: options.user.gid }
        : {}),
    };
  }

  run(command: string, args: readonly string[], options: RunOptions = {}) {
    return runCommand(this.spec(command, args, options), options.timeoutMs);
  }

  spawn(
    command: string,
    args: readonly string[],
    logFile: string,
    options: RunOptions & { emergencySignal?: NodeJS.Signals } = {},
  ) {
    return spawnServer(this.spec(command, args, options), logFile, options.emergencySignal);
  }
}

export const hostRuntime: Runtime = new HostRuntime();
