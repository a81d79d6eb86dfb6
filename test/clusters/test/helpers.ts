import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { eventually, MYSQL_TARGETS, PG_TARGETS } from '../src/index.js';

/**
 * PostgreSQL targets named in TIDEMARK_TARGETS (default: all of them). MySQL-family names in the
 * shared list belong to mysql-cluster.test.ts; an unknown name stays in so that its start fails
 * loudly instead of being dropped.
 */
export function targetsFromEnv(): string[] {
  const mysql: readonly string[] = MYSQL_TARGETS;
  const targets = (process.env['TIDEMARK_TARGETS'] ?? PG_TARGETS.join(','))
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '' && !mysql.includes(t));
  if (targets.length === 0) {
    console.warn(
      '\n*** SKIPPED: no PostgreSQL target in TIDEMARK_TARGETS; the PostgreSQL cluster tests did not run. ***\n',
    );
  }
  return targets;
}

/** 'X/Y' (hex halves, any zero padding) to a number we can compare. */
export function parseLsn(text: string): bigint {
  const m = /^([0-9A-F]{1,8})\/([0-9A-F]{1,8})$/i.exec(text);
  if (!m) throw new Error(`not an LSN: ${JSON.stringify(text)}`);
  return (BigInt(`0x${m[1]}`) << 32n) | BigInt(`0x${m[2]}`);
}

/** `eventually` with these tests' pace: every 50 ms, 15 s by default. */
export function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  return eventually(what, probe, timeoutMs, 50);
}

/**
 * Live (non-zombie) processes whose working directory is inside `dir`: every PostgreSQL server
 * process chdirs into its data directory, so this finds postmasters and all their children.
 */
export function processesUnder(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      if (state === 'Z' || state === 'X') continue;
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(Number(entry));
    } catch {
      // exited while we looked, or not ours to read
    }
  }
  return found;
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** /dev/shm files (any root, chroots included) that the given processes have mapped. */
export function mappedShmFiles(pids: readonly number[]): string[] {
  const files = new Set<string>();
  for (const pid of pids) {
    try {
      for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
        const m = /\s(\/\S*\/dev\/shm\/\S+|\/dev\/shm\/\S+)$/.exec(line);
        if (m) files.add(m[1]!);
      }
    } catch {
      // exited
    }
  }
  return [...files];
}

/** SysV shared memory segments created by `pid`, from /proc/sysvipc/shm. */
export function sysvSegmentsOf(pid: number): string[] {
  const [header, ...lines] = readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n');
  const cols = (header ?? '').trim().split(/\s+/);
  return lines
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => Number(f[cols.indexOf('cpid')]) === pid)
    .map((f) => f[cols.indexOf('shmid')]!);
}
