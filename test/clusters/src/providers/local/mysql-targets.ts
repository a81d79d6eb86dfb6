// Where each local MySQL/MariaDB target's binaries come from, and what makes them runnable.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  ChrootRuntime,
  chrootDir,
  chrootUnavailableReason,
  ensureChroot,
  ensureChrootTmpfs,
  setupScriptsDir,
} from '../../chroot.js';
import type { MysqlFlavour } from '../../mysql/dialect.js';
import { MYSQL_FAMILY } from '../../mysql/targets.js';
import { hostRuntime, type Runtime } from '../../runtime.js';

export interface MysqlBinaries {
  readonly target: string;
  readonly flavour: MysqlFlavour;
  readonly runtime: Runtime;
  /** The server (mysqld / mariadbd), as seen inside the runtime. */
  readonly server: string;
  /** MariaDB's mariadb-install-db; MySQL initialises with `mysqld --initialize-insecure`. */
  readonly installDb?: string;
  /** Major.minor the server must report, e.g. '9.7'. */
  readonly series: string;
}

export interface MysqlDistribution {
  readonly target: string;
  readonly flavour: MysqlFlavour;
  /** Cheap checks only (no build): why this target cannot run here, or undefined. */
  unavailableReason(): Promise<string | undefined>;
  /** Make the binaries runnable (may build a chroot: a minute or two, once). */
  prepare(): Promise<MysqlBinaries>;
}

const SETUP_HINT = 'run scripts/setup/mysql.sh as root';

/** MySQL from Debian sid, whose binaries need sid's glibc: a chroot built once into the cache. */
function chrootMysql(target: string, series: string): MysqlDistribution {
  const build = { name: target, script: join(setupScriptsDir(), `${target}-chroot.sh`) };
  const server = '/usr/sbin/mysqld';
  return {
    target,
    flavour: 'mysql',
    async unavailableReason() {
      if (process.platform !== 'linux') return 'chroots need Linux';
      if (process.getuid?.() !== 0) {
        return `${target} runs its servers in a chroot, which needs root`;
      }
      const reason = chrootUnavailableReason(build);
      if (reason) return `${reason}; ${SETUP_HINT}`;
      return undefined;
    },
    async prepare() {
      const root = await ensureChroot(build);
      if (!existsSync(join(root, server))) {
        throw new Error(
          `chroot ${chrootDir(target)} has no ${server}; delete the directory to rebuild it (${SETUP_HINT})`,
        );
      }
      const tmpfs = await ensureChrootTmpfs(root);
      return {
        target,
        flavour: 'mysql',
        runtime: new ChrootRuntime(root, tmpfs ? '/dev/shm' : '/var/tmp'),
        server,
        series,
      };
    },
  };
}

/** MariaDB from the host's own Debian packages (bookworm ships 10.11). */
function debianMariadb(target: string, series: string): MysqlDistribution {
  const server = '/usr/sbin/mariadbd';
  const installDb = '/usr/bin/mariadb-install-db';
  return {
    target,
    flavour: 'mariadb',
    async unavailableReason() {
      if (process.platform !== 'linux') return 'needs Linux (Debian mariadb packages)';
      for (const binary of [server, installDb]) {
        if (!existsSync(binary)) {
          return `${binary} not found (apt packages mariadb-server-core and mariadb-client-core; ${SETUP_HINT})`;
        }
      }
      const { stdout } = await hostRuntime.run(server, ['--version']).catch((err: Error) => ({
        stdout: `failed: ${err.message}`,
      }));
      if (!stdout.includes(`Ver ${series}.`)) {
        return `${server} is not MariaDB ${series}: ${stdout.trim()}`;
      }
      return undefined;
    },
    async prepare() {
      return { target, flavour: 'mariadb', runtime: hostRuntime, server, installDb, series };
    },
  };
}

export const MYSQL_DISTRIBUTIONS: Record<string, MysqlDistribution> = {
  mysql97: chrootMysql('mysql97', MYSQL_FAMILY.mysql97.series),
  mariadb1011: debianMariadb('mariadb1011', MYSQL_FAMILY.mariadb1011.series),
};
