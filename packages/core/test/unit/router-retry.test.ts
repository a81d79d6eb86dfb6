import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, ReplicasBehindError, Session, TidemarkError } from '../../src/index.js';
import { cp, ScriptedConnectionError } from '../support/scripted-adapter.js';
import { closeFixtures, routerFixture, sessionAt } from './helpers/router-fixture.js';

afterEach(closeFixtures);

describe('read retry', () => {
  it('retries a failed replica read once on another covering replica', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.replica('r1').lagSeconds = 0;
        a.replica('r2').lagSeconds = 1;
      },
    });
    const failure = new ScriptedConnectionError('connection reset');
    f.adapter.replica('r1').readFailures.push(failure);
    const { decision, value } = await f.read(sessionAt('1.10'));
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2']);
    expect(value).toBe('read on r2');
    expect(decision).toMatchObject({ target: 'r2', reason: 'replica-covered', retried: true });
    expect(f.events.retry).toEqual([{ cluster: 'default', failedTarget: 'r1', error: failure }]);
    const metrics = f.router.metrics();
    expect(metrics.retries).toBe(1);
    expect(metrics.reads).toBe(1);
    expect(metrics.replicaReads).toBe(1);
  });

  it('reports the failed replica to the monitor, so routing avoids it', async () => {
    const f = await routerFixture();
    const failure = new ScriptedConnectionError('connection reset');
    f.adapter.replica('r1').readFailures.push(failure);
    await f.read(new Session());
    const state = f.router.monitor.state('r1');
    expect(state?.reachable).toBe(false);
    expect(state?.failures).toBe(1);
    expect(state?.lastError).toBe(failure);
    // The next read does not try r1 again.
    expect((await f.read(new Session())).decision.target).toBe('r2');
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2', 'r2']);
  });

  it('retries on the primary when no other replica covers the position', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').applied = cp('1.12');
      },
    });
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.readTargets()).toEqual(['r1', 'primary']);
    expect(decision).toMatchObject({
      target: 'primary',
      reason: 'primary-fallback',
      retried: true,
      stale: false,
    });
  });

  it('retries a token-less read on the primary when no other replica is healthy', async () => {
    const f = await routerFixture({
      configure: (a) => {
        a.replica('r2').reachable = false;
      },
    });
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    const { decision } = await f.read(new Session());
    expect(f.adapter.readTargets()).toEqual(['r1', 'primary']);
    expect(decision).toMatchObject({
      target: 'primary',
      reason: 'primary-no-replica',
      retried: true,
    });
  });

  it('does not retry errors the adapter calls non-retryable', async () => {
    const syntaxError = new Error('syntax error at or near "SELEC"');
    const f = await routerFixture({
      adapter: { isRetryable: (error) => error instanceof ScriptedConnectionError },
    });
    f.adapter.replica('r1').readFailures.push(syntaxError);
    await expect(f.read(new Session())).rejects.toBe(syntaxError);
    expect(f.adapter.readTargets()).toEqual(['r1']);
    expect(f.router.metrics().retries).toBe(0);
    expect(f.router.monitor.state('r1')?.reachable).toBe(true);
    expect(f.events.retry).toEqual([]);
  });

  it("does not retry Tidemark's own errors thrown inside the callback", async () => {
    const f = await routerFixture();
    const own = new TidemarkError(ErrorCode.Closed, 'closed');
    const read = f.router.readDetailed(new Session(), async () => {
      throw own;
    });
    await expect(f.clock.run(read)).rejects.toBe(own);
    expect(f.adapter.readTargets()).toEqual(['r1']);
  });

  it('after two replicas fail one read, a last attempt goes to the primary; both replicas are reported', async () => {
    const f = await routerFixture();
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('first reset'));
    f.adapter.replica('r2').readFailures.push(new ScriptedConnectionError('second reset'));
    const result = await f.router.readDetailed(new Session(), async (c) => c.target);
    expect(result.value).toBe('primary');
    expect(result.decision).toMatchObject({ target: 'primary', reason: 'primary-no-replica' });
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2', 'primary']);
    expect(f.router.monitor.state('r1')?.reachable).toBe(false);
    expect(f.router.monitor.state('r2')?.reachable).toBe(false);
    expect(f.router.metrics()).toMatchObject({ reads: 1, primaryReads: 1, retries: 2 });
  });

  it('throws TIDEMARK_READ_FAILED when the primary fails that last attempt too (control: two failures alone are served)', async () => {
    const f = await routerFixture();
    const second = new ScriptedConnectionError('second reset');
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('first reset'));
    f.adapter.replica('r2').readFailures.push(second);
    f.adapter.primary.readFailures.push(new ScriptedConnectionError('primary reset'));
    const error = (await f.read(new Session()).catch((e: unknown) => e)) as TidemarkError;
    expect(error).toBeInstanceOf(TidemarkError);
    expect(error.code).toBe('TIDEMARK_READ_FAILED');
    expect(error.retryable).toBe(true);
    expect(error.cause).toBe(second);
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2', 'primary']);
    expect(f.router.metrics().reads).toBe(0);
  });

  it('with fallback off, two failed replicas fail the read (no primary attempt)', async () => {
    const f = await routerFixture({ router: { fallback: { enabled: false } } });
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('first reset'));
    f.adapter.replica('r2').readFailures.push(new ScriptedConnectionError('second reset'));
    await expect(f.read(new Session())).rejects.toMatchObject({ code: 'TIDEMARK_READ_FAILED' });
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2']);
  });

  it('a failed primary read is not retried on a replica that does not cover the position', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
      },
    });
    f.adapter.primary.readFailures.push(new ScriptedConnectionError('reset'));
    await expect(f.read(sessionAt('1.12'))).rejects.toMatchObject({ code: 'TIDEMARK_READ_FAILED' });
    expect(f.adapter.readTargets()).toEqual(['primary']);
  });

  it("a retry under degraded 'stale' goes to another replica, not back to the failed one", async () => {
    const f = await routerFixture({
      replicas: ['r1', 'r2', 'r3'],
      router: {
        wait: { budgetMs: 0 },
        fallback: { enabled: false },
        degraded: 'stale',
      },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').lagSeconds = 1;
        a.replica('r2').lagSeconds = 2;
        a.replica('r3').lagSeconds = 3;
      },
    });
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    const { decision } = await f.read(sessionAt('1.12'));
    expect(f.adapter.readTargets()).toEqual(['r1', 'r2']);
    expect(decision).toMatchObject({ target: 'r2', reason: 'degraded-stale', stale: true });
  });

  // Regression: readDetailed passes `waitedMs` where retryRoute expects the read's start
  // time, so a cap rejection on the retry reports "waited <clock now> ms".
  it('reports the real wait time when the retry hits the fallback cap', async () => {
    const f = await routerFixture({
      router: { wait: { budgetMs: 0 }, fallback: { burst: 1, ratePerSecond: 0 } },
      configure: (a) => {
        a.primary.position = cp('1.12');
        a.replica('r1').applied = cp('1.12');
      },
    });
    // First read: r1 fails, the retry takes the only fallback token.
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    expect((await f.read(sessionAt('1.12'))).decision.target).toBe('primary');
    await f.clock.run(f.router.monitor.refresh('r1'));
    // Second read: r1 fails again, the retry finds the cap exhausted.
    f.adapter.replica('r1').readFailures.push(new ScriptedConnectionError('reset'));
    const error = await f.read(sessionAt('1.12')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReplicasBehindError);
    expect(f.events.capRejected).toHaveLength(1);
    expect(f.events.capRejected[0]?.waitedMs).toBe(0);
    expect((error as Error).message).toContain('waited 0 ms');
  });
});

describe('writes', () => {
  it('are never retried: a failed write reaches adapter.write once and raises nothing', async () => {
    const f = await routerFixture();
    const failure = new ScriptedConnectionError('connection reset during commit');
    f.adapter.primary.writeFailures.push(failure);
    const session = new Session();
    const write = f.router.write(session, async () => 'inserted');
    await expect(f.clock.run(write)).rejects.toBe(failure);
    expect(f.adapter.calls.writes).toHaveLength(1);
    expect(session.version).toBe(0);
    expect(session.positionText('default')).toBeUndefined();
    expect(f.router.metrics().writes).toBe(0);
    expect(f.router.metrics().retries).toBe(0);
    expect(f.events.write).toEqual([]);
  });

  it('an error thrown by the write callback is not retried either', async () => {
    const f = await routerFixture();
    let calls = 0;
    const write = f.router.write(new Session(), async () => {
      calls++;
      throw new ScriptedConnectionError('deadlock detected');
    });
    await expect(f.clock.run(write)).rejects.toThrow('deadlock detected');
    expect(calls).toBe(1);
    expect(f.adapter.calls.writes).toHaveLength(1);
  });
});
