import type { Cluster } from './types.js';

/**
 * Wait until every replica of `cluster` has `table` (created on the primary): reads with a fresh
 * session may go to any of them. Throws after about 10 s.
 */
export async function waitForTable(cluster: Cluster, table: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await Promise.all(
      cluster.replicas().map((n) =>
        cluster.exec(n.name, `select count(*) as n from ${table}`).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (ok.every(Boolean)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the replicas never got table ${table}`);
}

/** Wait until node `node` has a row of `table` matching `where` (SQL). Throws after about 10 s. */
export async function waitForRow(
  cluster: Cluster,
  node: string,
  table: string,
  where: string,
): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const rows = (await cluster.exec(
      node,
      `select count(*) as n from ${table} where ${where}`,
    )) as Array<{ n: number | string }>;
    if (Number(rows[0]?.n) > 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${node} never got the row of ${table} where ${where}`);
}

/**
 * Poll `check` every `intervalMs` until it returns a value (not undefined), and return it; a
 * check that throws counts as not yet. Throws after `timeoutMs`, with the last error as cause.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    await sleep(intervalMs);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** An AbortSignal that never fires, for probe contexts. */
export function noSignal(): AbortSignal {
  return new AbortController().signal;
}
