/**
 * One request writes to PostgreSQL and MySQL through two routers sharing one session handle,
 * and answers with one cookie; the next request, from that cookie alone, reads both writes back
 * while replay is paused on every replica. The control reads the same rows with a fresh session
 * (no cookie): the replicas do not have them, so it must miss both.
 */
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTables,
  type Nodes,
  openShop,
  placeOrder,
  type Shop,
  showOrder,
} from '../src/shop.js';

const nodesOf = (cluster: Cluster): Nodes => ({
  primary: cluster.primary().url,
  replicas: Object.fromEntries(cluster.replicas().map((n) => [n.name, n.url])),
});

describe('one cookie, two databases (real PostgreSQL 15 and MySQL 9.7 clusters)', () => {
  let pgCluster: Cluster;
  let mysqlCluster: Cluster;
  let shop: Shop;

  beforeAll(async () => {
    [pgCluster, mysqlCluster] = await Promise.all([
      startCluster('pg15', { replicas: 1 }),
      startCluster('mysql97', { replicas: 1 }),
    ]);
    shop = await openShop(nodesOf(pgCluster), nodesOf(mysqlCluster), 's'.repeat(32));
    await createTables(shop);
  });

  afterAll(async () => {
    await shop?.close();
    await Promise.all([pgCluster?.teardown(), mysqlCluster?.teardown()]);
  });

  it('the next request sees both writes from the cookie; a request without it misses both', async () => {
    for (const cluster of [pgCluster, mysqlCluster]) {
      for (const replica of cluster.replicas()) await cluster.pauseReplay(replica.name);
    }
    try {
      const results = [];
      for (let customer = 1; customer <= 5; customer++) {
        const placed = await placeOrder(shop, undefined, customer);
        expect(placed.cookie).toBeDefined();
        results.push({
          withCookie: await showOrder(shop, placed.cookie, placed.orderId),
          without: await showOrder(shop, undefined, placed.orderId),
          cookie: placed.cookie as string,
        });
      }
      for (const r of results) {
        expect(r.withCookie).toEqual({ order: true, invoice: true });
        expect(r.without).toEqual({ order: false, invoice: false });
        // One token, both clusters, signed.
        expect(r.cookie.split('~').filter((f) => f === 'orders' || f === 'invoices')).toHaveLength(
          2,
        );
        expect(r.cookie).toContain('~~');
      }
      const metrics = [shop.orders.metrics(), shop.invoices.metrics()];
      for (const m of metrics) expect(m.primaryReads).toBeGreaterThanOrEqual(5);
    } finally {
      for (const cluster of [pgCluster, mysqlCluster]) {
        for (const replica of cluster.replicas()) await cluster.resumeReplay(replica.name);
      }
    }
  });

  it('a cookie edited by the client is refused with a TokenError by either router', async () => {
    const placed = await placeOrder(shop, undefined, 99);
    const forged = (placed.cookie as string).replace(/~~.*$/, '~~AAAA');
    expect(() => shop.orders.withSession(forged)).toThrow(/TIDEMARK_TOKEN|signature/i);
    expect(() => shop.invoices.withSession(forged)).toThrow(/TIDEMARK_TOKEN|signature/i);
  });
});
