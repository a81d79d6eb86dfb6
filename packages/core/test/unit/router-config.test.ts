import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  type ReplicaState,
  Router,
  type RouterOptions,
  Session,
} from '../../src/index.js';
import type { CounterPosition } from '../support/counter-codec.js';
import { ScriptedAdapter, type ScriptedConnection } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture } from './helpers/router-fixture.js';

afterEach(closeFixtures);

type Options = Omit<RouterOptions<CounterPosition, ScriptedConnection>, 'adapter'>;

/** Construct a router expecting a ConfigError; closes it if construction wrongly succeeds. */
function configError(options: Options, replicas: readonly string[] = ['r1']): ConfigError {
  let router: Router<CounterPosition, ScriptedConnection> | undefined;
  try {
    router = new Router({ adapter: new ScriptedAdapter({ replicas }), ...options });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('TIDEMARK_CONFIG');
    return error as ConfigError;
  }
  void router.close();
  throw new Error('expected a ConfigError');
}

describe('Router configuration', () => {
  it.each([
    ['degraded', { degraded: 'fast' }],
    ['badToken', { badToken: 'drop' }],
    ['otherHistory', { otherHistory: 'replica' }],
  ])('rejects an unknown %s policy', (name, options) => {
    const error = configError(options as unknown as Options);
    expect(error.message).toContain(name);
  });

  it.each([
    ['wait.budgetMs', { wait: { budgetMs: -1 } }],
    ['wait.budgetMs', { wait: { budgetMs: Number.NaN } }],
    ['wait.budgetMs', { wait: { budgetMs: Number.POSITIVE_INFINITY } }],
    ['wait.pollIntervalMs', { wait: { pollIntervalMs: 0 } }],
    ['fallback.burst', { fallback: { burst: 0 } }],
    ['fallback.ratePerSecond', { fallback: { ratePerSecond: -1 } }],
    ['fallback.maxConcurrent', { fallback: { maxConcurrent: 0 } }],
    ['fallback.maxConcurrent', { fallback: { maxConcurrent: Number.NaN } }],
    ['fallback.queueMs', { fallback: { queueMs: -1 } }],
    ['intervalMs', { monitorOptions: { intervalMs: 0 } }],
  ])('rejects a bad %s', (name, options) => {
    expect(configError(options as Options).message).toContain(name);
  });

  it("rejects a replica named 'primary'", () => {
    expect(configError({}, ['r1', 'primary']).message).toContain('primary');
  });

  it('rejects duplicate replica ids', () => {
    configError({}, ['r1', 'r1']);
  });

  it('rejects a cluster name that cannot go into a token', () => {
    configError({ cluster: 'orders db' });
    configError({ cluster: '' });
  });

  it('accepts budget 0 and ratePerSecond 0 (both mean "off")', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { ratePerSecond: 0, burst: 1 } },
    });
    expect((await f.read(new Session())).decision.reason).toBe('no-token');
  });
});

describe('Router lifecycle', () => {
  it('close() is idempotent, closes the adapter once, and later calls throw TIDEMARK_CLOSED', async () => {
    const f = await routerFixture();
    await f.router.close();
    await f.router.close();
    expect(f.adapter.calls.closes).toBe(1);
    await expect(f.read(new Session())).rejects.toMatchObject({ code: 'TIDEMARK_CLOSED' });
    await expect(f.router.write(new Session(), async () => 1)).rejects.toMatchObject({
      code: 'TIDEMARK_CLOSED',
    });
  });

  it("re-emits the monitor's replica states as 'replica-state'", async () => {
    const f = await routerFixture();
    const states: Array<ReplicaState<CounterPosition>> = [];
    f.router.events.on('replica-state', (s) => states.push(s));
    f.adapter.replica('r2').reachable = false;
    await f.clock.run(f.router.monitor.refresh('r2'));
    expect(states.map((s) => [s.id, s.reachable])).toEqual([['r2', false]]);
  });

  it('uses the configured cluster name in decisions and session positions', async () => {
    const f = await routerFixture({ router: { cluster: 'orders' } });
    const session = new Session();
    const { decision } = await f.read(session);
    expect(decision.cluster).toBe('orders');
    expect(session.clusters()).toEqual(['orders']);
  });

  it('a throwing event listener never breaks a read', async () => {
    const f = await routerFixture();
    f.router.events.on('decision', () => {
      throw new Error('broken metrics hook');
    });
    expect((await f.read(new Session())).decision.reason).toBe('no-token');
  });
});
