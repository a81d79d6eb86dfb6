// An initialised data directory per target, made once per test process and copied for every
// node of every cluster: `mysqld --initialize-insecure` takes about 4 s and mariadb-install-db
// about 1 s, a copy on tmpfs a tenth of that. The copies must not share an identity: MySQL keeps
// its server_uuid in auto.cnf, which the cluster deletes from each copy so every node makes its
// own (nodes sharing one cannot replicate from each other). MariaDB has no such file; its nodes
// differ by server-id.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SystemUser } from '../../runtime.js';
import { createRunDir, type RunDir } from '../../tempdir.js';
import { commonSettings, initSql } from './mysql-config.js';
import type { MysqlBinaries } from './mysql-targets.js';

/** Run directories of templates start with the cluster prefix, so crash reaping covers both. */
export const TEMPLATE_PREFIX = 'tidemark-my-template-';

export interface DataTemplate {
  /** The initialised data directory on the host. Never started: copy it, do not use it. */
  readonly dataHost: string;
  /** How long making it took (0 when it was already made by this process). */
  readonly initMs: number;
}

const templates = new Map<string, Promise<DataTemplate>>();

async function initialise(bins: MysqlBinaries, user: SystemUser): Promise<DataTemplate> {
  const started = performance.now();
  // Lives until this process exits (the run dir's exit hook deletes it), or until the next
  // startCluster() after a crash reaps it.
  const dir: RunDir = await createRunDir(bins.runtime, TEMPLATE_PREFIX, user);
  try {
    const config = join(dir.inner, 'my.cnf');
    const init = join(dir.inner, 'init.sql');
    const data = join(dir.inner, 'data');
    await writeFile(
      bins.runtime.hostPath(config),
      `[mysqld]\n${commonSettings(bins.flavour).trim()}\n`,
    );
    await writeFile(bins.runtime.hostPath(init), initSql(bins.flavour));
    const options = { user, timeoutMs: 180_000 };
    if (bins.flavour === 'mysql') {
      // No binary log while initialising: every node starts its own, with an empty GTID history.
      await bins.runtime.run(
        bins.server,
        [
          `--defaults-file=${config}`,
          '--initialize-insecure',
          `--datadir=${data}`,
          `--init-file=${init}`,
          '--skip-log-bin',
        ],
        options,
      );
    } else {
      if (!bins.installDb) throw new Error(`${bins.target}: no mariadb-install-db`);
      await bins.runtime.run(
        bins.installDb,
        [
          `--defaults-file=${config}`,
          `--datadir=${data}`,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          '--skip-name-resolve',
          `--extra-file=${init}`,
        ],
        options,
      );
    }
    return { dataHost: join(dir.host, 'data'), initMs: performance.now() - started };
  } catch (err) {
    await dir.remove();
    throw new Error(
      `could not initialise a ${bins.target} data directory (${bins.runtime.description}): ${(err as Error).message}`,
    );
  }
}

/**
 * The template data directory for this target in this process, made on first use. A failed
 * attempt is forgotten, so the next cluster tries again.
 */
export async function dataTemplate(bins: MysqlBinaries, user: SystemUser): Promise<DataTemplate> {
  const key = `${bins.target}@${bins.runtime.description}`;
  let pending = templates.get(key);
  const made = pending === undefined;
  if (!pending) {
    pending = initialise(bins, user);
    templates.set(key, pending);
    pending.catch(() => templates.delete(key));
  }
  const template = await pending;
  return made ? template : { ...template, initMs: 0 };
}
