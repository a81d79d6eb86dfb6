import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, ErrorCode, Router, Session } from '@tidemark/core';
import { createPgAdapter, type PgAdapter } from '@tidemark/pg';
import { type Cluster, startCluster } from '@tidemark/test-clusters';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROMETHEUS_CONTENT_TYPE, prometheusHandler, prometheusText } from '../../src/index.js';

/**
 * PostgreSQL targets: env TIDEMARK_TARGETS (comma separated; others are left out), default pg18,
 * the fastest to start. The formatter reads only core's router state, so one adapter proves it.
 */
function pgTargets(): string[] {
  const requested = (process.env['TIDEMARK_TARGETS'] ?? 'pg18').split(',').map((t) => t.trim());
  const targets = requested.filter((target) => /^pg\d+$/.test(target));
  if (targets.length === 0) {
    console.warn(
      `\n*** @tidemark/prometheus integration tests SKIPPED: TIDEMARK_TARGETS=${JSON.stringify(process.env['TIDEMARK_TARGETS'])} names no PostgreSQL target. ***\n`,
    );
  }
  return targets;
}

/** A replica id with every character the format must escape in a label value. */
const AWKWARD = 'east\\1 "b"\nline';

/**
 * The format rules, checked line by line (text format 0.0.4): HELP then TYPE then the samples
 * of one family, each family once, sample names matching their family, counters ending in
 * _total, label values escaped, values that parse as floats, a final line feed.
 */
function assertStrictFormat(text: string): void {
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.slice(0, -1).split('\n');
  const families = new Set<string>();
  let family: { name: string; type?: string } | undefined;
  const label = String.raw`[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"`;
  const sample = new RegExp(
    String.raw`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(${label}(?:,${label})*)\})? (\S+)$`,
  );
  for (const line of lines) {
    const help = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) ((?:[^\\\n]|\\[\\n])*)$/.exec(line);
    if (help) {
      expect(families.has(help[1]!), `family ${help[1]} written twice`).toBe(false);
      families.add(help[1]!);
      family = { name: help[1]! };
      continue;
    }
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$/.exec(line);
    if (type) {
      expect(type[1]).toBe(family?.name);
      expect(family?.type).toBeUndefined();
      family!.type = type[2]!;
      if (type[2] === 'counter') expect(type[1]!.endsWith('_total')).toBe(true);
      continue;
    }
    const match = sample.exec(line);
    expect(match, `not a sample line: ${JSON.stringify(line)}`).not.toBeNull();
    expect(match![1]).toBe(family?.name);
    expect(family?.type).toBeDefined();
    const value = match![3]!;
    expect(['NaN', '+Inf', '-Inf'].includes(value) || Number.isFinite(Number(value))).toBe(true);
  }
}

function parsed(text: string) {
  return parsePrometheusTextFormat(text);
}

function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  const family = parsed(text).find((f) => f.name === name);
  const metric = family?.metrics.find((m) =>
    Object.entries(labels).every(([k, v]) => m.labels?.[k] === v),
  );
  return metric === undefined ? undefined : Number(metric.value);
}

describe.skipIf(pgTargets().length === 0).each(pgTargets())(
  '%s: Prometheus exposition',
  (target) => {
    let cluster: Cluster;
    let router: Router<unknown, pg.PoolClient>;
    let other: Router<unknown, pg.PoolClient>;

    beforeAll(async () => {
      cluster = await startCluster(target, { replicas: 2 });
      await cluster.exec(cluster.primary().name, 'CREATE TABLE items (id int PRIMARY KEY)');
      const [r1, r2] = cluster.replicas();
      const adapter = (replicas: Record<string, string>): PgAdapter =>
        createPgAdapter({ primary: cluster.primary().url, replicas, poolSize: 4 });
      router = new Router({
        adapter: adapter({ [AWKWARD]: r1!.url, r2: r2!.url }),
        cluster: 'main',
        wait: { budgetMs: 50 },
      }) as Router<unknown, pg.PoolClient>;
      other = new Router({
        adapter: adapter({ r2: r2!.url }),
        cluster: 'other',
      }) as Router<unknown, pg.PoolClient>;
      await router.ready();
      await other.ready();
    }, 240_000);

    afterAll(async () => {
      await router?.close();
      await other?.close();
      await cluster?.teardown();
    });

    it('a fresh router: well-formed, every counter at zero, replicas up', () => {
      const text = prometheusText([router, other]);
      assertStrictFormat(text);
      const families = parsed(text);
      for (const family of families.filter((f) => f.type === 'COUNTER')) {
        expect(family.metrics.every((m) => Number(m.value) === 0)).toBe(true);
      }
      // The awkward replica id survives escaping and parsing unchanged.
      expect(value(text, 'tidemark_replica_up', { cluster: 'main', replica: AWKWARD })).toBe(1);
      expect(value(text, 'tidemark_replica_up', { cluster: 'other', replica: 'r2' })).toBe(1);
      expect(
        value(text, 'tidemark_replica_history', { replica: AWKWARD, history: 'current' }),
      ).toBe(1);
      expect(
        value(text, 'tidemark_replica_history', { replica: AWKWARD, history: 'diverged' }),
      ).toBe(0);
    });

    it('replay paused: the counters match router.metrics() and the replicas read as paused', async () => {
      for (const replica of cluster.replicas()) await cluster.pauseReplay(replica.name);
      try {
        for (let i = 1; i <= 4; i++) {
          const session = new Session();
          await router.write(session, (c) => c.query('INSERT INTO items VALUES ($1)', [i]));
          const { decision } = await router.readDetailed(session, (c) =>
            c.query('SELECT 1 FROM items WHERE id = $1', [i]),
          );
          expect(decision.reason).toBe('primary-fallback');
        }
        for (let i = 0; i < 3; i++) {
          await router.read(new Session(), (c) => c.query('SELECT 1'));
        }
        // Let the monitor sample the primary ahead of the paused replicas.
        await new Promise((resolve) => setTimeout(resolve, 600));
        const text = prometheusText([router, other]);
        assertStrictFormat(text);
        const m = router.metrics();
        const main = { cluster: 'main' };
        expect(
          value(text, 'tidemark_reads_total', {
            ...main,
            reason: 'primary-fallback',
            outcome: 'primary_fallback',
          }),
        ).toBe(4);
        expect(m.byReason['primary-fallback']).toBe(4);
        expect(value(text, 'tidemark_reads_total', { ...main, reason: 'no-token' })).toBe(
          m.byReason['no-token'],
        );
        expect(value(text, 'tidemark_primary_reads_total', main)).toBe(m.primaryReads);
        expect(value(text, 'tidemark_replica_reads_total', main)).toBe(m.replicaReads);
        expect(value(text, 'tidemark_writes_total', main)).toBe(4);
        expect(
          value(text, 'tidemark_reads_total', { cluster: 'other', reason: 'primary-fallback' }),
        ).toBe(0);
        for (const replica of [AWKWARD, 'r2']) {
          const at = { ...main, replica };
          expect(value(text, 'tidemark_replica_paused', at)).toBe(1);
          expect(value(text, 'tidemark_replica_staleness_seconds', at)).toBeGreaterThan(0);
          const age = value(text, 'tidemark_replica_sample_age_seconds', at)!;
          expect(age).toBeGreaterThanOrEqual(0);
          expect(age).toBeLessThan(5);
        }
        // A replica's own lag report is left out while unknown; when present it is a number.
        const lag = value(text, 'tidemark_replica_lag_seconds', { ...main, replica: 'r2' });
        if (lag !== undefined) expect(Number.isFinite(lag)).toBe(true);
      } finally {
        for (const replica of cluster.replicas()) await cluster.resumeReplay(replica.name);
      }
    });

    it('never writes a token or a position', async () => {
      const session = new Session();
      await router.write(session, (c) => c.query('INSERT INTO items VALUES (100)'));
      await session.settled('main');
      const position = session.toTokenData().positions['main']!;
      expect(position.length).toBeGreaterThan(0);
      expect(prometheusText(router)).not.toContain(position);
    });

    it('serves the page over HTTP with the 0.0.4 content type', async () => {
      const server = createServer(prometheusHandler([router, other]));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const response = await fetch(`http://127.0.0.1:${port}/metrics`);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe(PROMETHEUS_CONTENT_TYPE);
        const text = await response.text();
        assertStrictFormat(text);
        expect(value(text, 'tidemark_writes_total', { cluster: 'main' })).toBe(
          router.metrics().writes,
        );
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('bad configuration is a typed error', () => {
      const error = (() => {
        try {
          prometheusText(router, { prefix: '1bad' });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).code).toBe(ErrorCode.Config);
      expect(() => prometheusText([router, router])).toThrow(ConfigError);
    });
  },
);
