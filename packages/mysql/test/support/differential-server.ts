/**
 * Which MySQL server the differential test compares against, and how to get it.
 *
 * The plan is decided synchronously, at collection time, so a skip can be declared with
 * `describe.skipIf` and announced before anything runs:
 * - `TIDEMARK_MYSQL_URL` set: that server (an explicit server beats the target list).
 * - else `TIDEMARK_TARGETS` set and without `mysql97`: skipped, because the caller chose other targets.
 * - else: a MySQL 9.7 server of our own, started through the test harness.
 */
import { type Cluster, startCluster } from '@tidemark/test-clusters';

/** The harness target the differential test runs on when no URL is given. */
export const DIFFERENTIAL_TARGET = 'mysql97';

export type DifferentialPlan =
  | { readonly kind: 'external'; readonly url: string }
  | { readonly kind: 'harness'; readonly target: typeof DIFFERENTIAL_TARGET }
  | { readonly kind: 'skipped'; readonly reason: string };

/** A server to compare against, and how to let go of it. */
export interface DifferentialServer {
  readonly url: string;
  /** Where the server came from, for the log. */
  readonly origin: string;
  /** Stops the server if we started it. Safe to call more than once. */
  close(): Promise<void>;
}

/** Decide from the environment, without touching any server. */
export function differentialPlan(env: NodeJS.ProcessEnv = process.env): DifferentialPlan {
  const url = env['TIDEMARK_MYSQL_URL']?.trim();
  if (url) return { kind: 'external', url };
  const targets = env['TIDEMARK_TARGETS']?.trim();
  if (targets) {
    const requested = targets
      .split(',')
      .map((target) => target.trim())
      .filter((target) => target !== '');
    if (!requested.includes(DIFFERENTIAL_TARGET)) {
      return {
        kind: 'skipped',
        reason: `TIDEMARK_TARGETS=${JSON.stringify(targets)} does not include ${DIFFERENTIAL_TARGET} (the caller chose other targets), and TIDEMARK_MYSQL_URL is not set`,
      };
    }
  }
  return { kind: 'harness', target: DIFFERENTIAL_TARGET };
}

/** The loud banner for a skipped run: a skip must never read as a pass. */
export function skipBanner(reason: string): string {
  const line = '!'.repeat(100);
  return [
    '',
    line,
    'SKIPPED: test/differential.test.ts did NOT run. The GTID set algebra was NOT compared with a real',
    `MySQL server (GTID_SUBSET / GTID_SUBTRACT). Why: ${reason}.`,
    `To run it: include ${DIFFERENTIAL_TARGET} in TIDEMARK_TARGETS (or unset it), or set TIDEMARK_MYSQL_URL to a`,
    'MySQL 8.0+ server, e.g. TIDEMARK_MYSQL_URL=mysql://root@127.0.0.1:13306/',
    line,
    '',
  ].join('\n');
}

/**
 * Get the server the plan names. For the harness plan this starts a source-only mysql97 cluster
 * (no replicas: the GTID functions need none); if it cannot start, this throws with the harness's
 * reason and what to do, so the test fails instead of passing silently.
 */
export async function openDifferentialServer(
  plan: Exclude<DifferentialPlan, { kind: 'skipped' }>,
): Promise<DifferentialServer> {
  if (plan.kind === 'external') {
    return { url: plan.url, origin: 'TIDEMARK_MYSQL_URL', close: async () => {} };
  }
  let cluster: Cluster;
  try {
    cluster = await startCluster(plan.target, { replicas: 0 });
  } catch (error) {
    throw new Error(
      `the differential test could not start ${plan.target} through the test harness: ${(error as Error).message}. ` +
        'Install the servers with `sudo bash scripts/setup/mysql.sh`, or point TIDEMARK_MYSQL_URL at a MySQL 8.0+ server.',
      { cause: error },
    );
  }
  return {
    url: cluster.primary().url,
    origin: `harness ${plan.target} (${cluster.version}), source only`,
    close: () => cluster.teardown(),
  };
}
