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
