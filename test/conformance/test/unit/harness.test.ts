// Fast checks of the suite's own machinery (no database): target list parsing, the naive
// control's routing, the tracing wrapper and the report format.
import type { Adapter, PositionCodec } from '@tidemark/core/adapter';
import { type Cluster, providerCapabilities } from '@tidemark/test-clusters';
import { describe, expect, it } from 'vitest';
import {
  type AnyConformanceTarget,
  adapterContract,
  allScenarios,
  formatLine,
  formatSummary,
  missingCapabilities,
  NaiveRouter,
  parseTargetList,
  runOnFreshCluster,
  runScenario,
  type ScenarioReport,
  scenarios,
  selectScenarios,
  settleFromEnv,
  traceAdapter,
} from '../../src/index.js';

const numberCodec: PositionCodec<number> = {
  kind: 'n',
  decode: (text) => Number(text),
  encode: (position) => String(position),
  compare: (applied, required) => (applied >= required ? 'covered' : 'behind'),
  merge: (a, b) => Math.max(a, b),
};

function fakeAdapter(failOn: string[] = []): Adapter<number, string> {
  return {
    codec: numberCodec,
    replicas: ['r1', 'r2'],
    async read(target, fn) {
      if (failOn.includes(target)) throw new Error(`${target} is down`);
      return { value: await fn(target) };
    },
    async write(fn) {
      return { value: await fn('primary'), position: 1 };
    },
    async probe() {
      return { applied: 1 };
    },
    async probePrimary() {
      return 1;
    },
    async close() {},
  };
}

describe('parseTargetList', () => {
  it('defaults to pg15', () => {
    expect(parseTargetList(undefined)).toEqual(['pg15']);
    expect(parseTargetList('  ')).toEqual(['pg15']);
  });
  it('splits, trims and de-duplicates', () => {
    expect(parseTargetList('pg15, pg19,pg15')).toEqual(['pg15', 'pg19']);
  });
  it('rejects unknown names and lists the known ones', () => {
    expect(() => parseTargetList('pg15,pg99')).toThrow(/pg99.*Known targets: pg15, pg18, pg19/);
  });
});

describe('settleFromEnv', () => {
  it('leaves the router default when unset and passes the two modes through', () => {
    expect(settleFromEnv(undefined)).toEqual({});
    expect(settleFromEnv('')).toEqual({});
    expect(settleFromEnv('immediate')).toEqual({ settle: 'immediate' });
    expect(settleFromEnv('deferred')).toEqual({ settle: 'deferred' });
  });
  it('rejects anything else, naming the accepted values', () => {
    expect(() => settleFromEnv('eager')).toThrow(
      /TIDEMARK_SETTLE=eager: expected immediate or deferred/,
    );
  });
});

describe('NaiveRouter', () => {
  it('reads round-robin over replicas and writes to the primary', async () => {
    const naive = new NaiveRouter(fakeAdapter());
    const targets = [];
    for (let i = 0; i < 4; i++) targets.push((await naive.read(async (c) => c)).target);
    expect(targets).toEqual(['r1', 'r2', 'r1', 'r2']);
    expect(await naive.write(async (c) => c)).toBe('primary');
  });
  it('passes read errors through without retrying', async () => {
    const naive = new NaiveRouter(fakeAdapter(['r1']));
    await expect(naive.read(async (c) => c)).rejects.toThrow('r1 is down');
    expect((await naive.read(async (c) => c)).target).toBe('r2');
  });
});

describe('traceAdapter', () => {
  it('records successful and failed reads and keeps optional members absent', async () => {
    const traced = traceAdapter(fakeAdapter(['r2']));
    await traced.adapter.read('r1', async (c) => c, {});
    await expect(traced.adapter.read('r2', async (c) => c, {})).rejects.toThrow();
    expect(traced.reads.map((r) => `${r.target}:${r.ok}`)).toEqual(['r1:true', 'r2:false']);
    expect(traced.adapter.waitFor).toBeUndefined();
    expect(traced.adapter.isRetryable).toBeUndefined();
  });
});

describe('report', () => {
  const report: ScenarioReport = {
    target: 'pg15',
    scenario: 'paused-replay',
    result: 'pass',
    ms: 812.4,
    counts: { errors: 0, router_misses: 0, control_misses: 60, fallbacks: 60, waits: 0 },
    checks: [{ name: 'x', pass: true, detail: '' }],
  };
  it('prints the leading counts first, then the rest, then ms', () => {
    expect(formatLine(report)).toBe(
      'conformance target=pg15 scenario=paused-replay result=pass router_misses=0 control_misses=60 fallbacks=60 waits=0 errors=0 ms=812',
    );
  });
  it('summarises with a pass count', () => {
    const text = formatSummary([report, { ...report, scenario: 'ryw-idle', result: 'fail' }]);
    expect(text).toContain('1/2 passed');
    expect(text).toMatch(/pg15\s+ryw-idle\s+fail/);
  });
});

describe('scenario list', () => {
  it('runs the six adapter contract checks first, on the shared cluster, needing nothing', () => {
    expect(adapterContract.map((s) => s.name)).toEqual([
      'contract-read-observes',
      'contract-read-only',
      'contract-no-leaked-transaction',
      'contract-retryable',
      'contract-abort',
      'contract-closed',
    ]);
    expect(allScenarios).toEqual([...adapterContract, ...scenarios]);
    expect(adapterContract.every((s) => !s.freshCluster && (s.needs ?? []).length === 0)).toBe(
      true,
    );
    expect(selectScenarios(undefined)).toEqual(allScenarios);
    expect(selectScenarios('contract')).toEqual(adapterContract);
    expect(selectScenarios('contract-abort,ryw-idle').map((s) => s.name)).toEqual([
      'contract-abort',
      'ryw-idle',
    ]);
    expect(() => selectScenarios('contract-nope')).toThrow(/Unknown scenario/);
  });

  it('has the fifteen scenarios with unique names; topology changes get fresh clusters', () => {
    const names = scenarios.map((s) => s.name);
    expect(new Set(names).size).toBe(15);
    expect(scenarios.filter((s) => s.freshCluster).map((s) => s.name)).toEqual([
      'replica-killed',
      'promotion-lost-write',
      'lost-write-old-history-replica',
      'lost-write-replica-follows',
      'history-check-unavailable',
      'write-after-failover',
      'promoted-behind-stale-config',
      'replica-cut-off',
    ]);
  });
  it('declares what each scenario makes the cluster do', () => {
    const needs = Object.fromEntries(scenarios.map((s) => [s.name, [...(s.needs ?? [])]]));
    expect(needs).toEqual({
      'ryw-idle': [],
      'paused-replay': ['pause'],
      'monotonic-reads': ['pause'],
      'bounded-wait': ['pause'],
      'fallback-cap': ['pause'],
      'replica-killed': ['kill'],
      'promotion-lost-write': ['kill', 'promote'],
      'bad-tokens': [],
      'token-two-sources': ['pause'],
      'lost-write-old-history-replica': ['kill', 'promote-partial'],
      'lost-write-replica-follows': ['kill', 'promote-partial', 'follow-diverged'],
      'history-check-unavailable': ['kill', 'promote-partial', 'freeze'],
      'write-after-failover': ['kill', 'promote-partial'],
      'promoted-behind-stale-config': ['kill', 'promote'],
      'replica-cut-off': ['cut-off'],
    });
  });
});

describe('not applicable', () => {
  const scenario = scenarios.find((s) => s.name === 'history-check-unavailable')!;
  it('lists the capabilities a cluster lacks', () => {
    expect(missingCapabilities(scenario, new Set(['pause', 'kill', 'promote']))).toEqual([
      'promote-partial',
      'freeze',
    ]);
    expect(missingCapabilities(scenario, providerCapabilities('local', 'pg15'))).toEqual([]);
    expect(missingCapabilities(scenario, providerCapabilities('external', 'pg15'))).toEqual([
      'kill',
      'promote-partial',
      'freeze',
    ]);
  });
  it('never runs the scenario and never counts as a pass', async () => {
    let started = false;
    const target = {
      name: 'fake',
      startCluster: async () => {
        started = true;
        throw new Error('must not start');
      },
    } as unknown as AnyConformanceTarget;
    const report = await runOnFreshCluster(target, scenario, () => undefined, new Set(['pause']));
    expect(started).toBe(false);
    expect(report.result).toBe('not-applicable');
    expect(formatLine(report)).toBe(
      'conformance target=fake scenario=history-check-unavailable result=not-applicable needs=kill,promote-partial,freeze',
    );
    const summary = formatSummary([
      report,
      { ...report, scenario: 'x', result: 'pass', needs: [] },
    ]);
    expect(summary).toContain('1/1 passed, 1 NOT APPLICABLE (not passed)');
  });
  it('is decided on the cluster too (runScenario)', async () => {
    const cluster = { capabilities: new Set(['pause']) } as unknown as Cluster;
    const report = await runScenario({ name: 'fake' } as AnyConformanceTarget, cluster, scenario);
    expect(report.result).toBe('not-applicable');
    expect(report.needs).toEqual(['kill', 'promote-partial', 'freeze']);
  });
});
