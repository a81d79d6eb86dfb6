import {
  type RouteDecision,
  Router,
  type RouterEvents,
  type RouterOptions,
  Session,
} from '../../../src/index.js';
import type { CounterPosition } from '../../support/counter-codec.js';
import {
  ScriptedAdapter,
  type ScriptedAdapterOptions,
  type ScriptedConnection,
} from '../../support/scripted-adapter.js';
import { FakeClock, realDelay } from './fake-clock.js';

export type TestRouter = Router<CounterPosition, ScriptedConnection>;
type TestRouterOptions = Omit<RouterOptions<CounterPosition, ScriptedConnection>, 'adapter'>;

/** Every router event, recorded in order of emission. */
export interface RecordedEvents {
  decision: RouteDecision[];
  wait: Array<Parameters<RouterEvents<CounterPosition>['wait']>[0]>;
  capRejected: Array<Parameters<RouterEvents<CounterPosition>['cap-rejected']>[0]>;
  retry: Array<Parameters<RouterEvents<CounterPosition>['retry']>[0]>;
  badToken: Array<Parameters<RouterEvents<CounterPosition>['bad-token']>[0]>;
  otherHistory: Array<Parameters<RouterEvents<CounterPosition>['other-history']>[0]>;
  write: Array<Parameters<RouterEvents<CounterPosition>['write']>[0]>;
}

export interface Fixture {
  readonly clock: FakeClock;
  readonly adapter: ScriptedAdapter;
  readonly router: TestRouter;
  readonly events: RecordedEvents;
  /** `router.readDetailed` driven to completion on the virtual clock. */
  read(
    session: Session,
    options?: { affinityKey?: string },
  ): Promise<{ value: string; decision: RouteDecision }>;
}

export interface FixtureOptions {
  replicas?: readonly string[];
  adapter?: Omit<ScriptedAdapterOptions, 'replicas' | 'clock'>;
  router?: TestRouterOptions;
  /** Change the scripted cluster before the router takes its first samples. */
  configure?: (adapter: ScriptedAdapter) => void;
  /** Skip `router.ready()` (for replicas whose probes are held). Default false. */
  skipReady?: boolean;
  /**
   * Use the router's own default selection (`balanced`, random among equals). By default the
   * fixture picks `least-lag`, so tests about other things know which replica a read goes to
   * (`r1` first among equals); `router.selection` overrides both.
   */
  defaultSelection?: boolean;
}

/**
 * Background polling is pushed out to an hour so that the only probes are the ones the test
 * causes (ready, refresh, waits); health age limits are set per test where they matter.
 */
export const QUIET_MONITOR = {
  intervalMs: 3_600_000,
  backoffInitialMs: 3_600_000,
  backoffMaxMs: 3_600_000,
  probeTimeoutMs: 5_000,
} as const;

const open = new Set<Fixture>();

export async function routerFixture(options: FixtureOptions = {}): Promise<Fixture> {
  const clock = new FakeClock();
  const adapter = new ScriptedAdapter({
    replicas: options.replicas ?? ['r1', 'r2'],
    clock,
    ...options.adapter,
  });
  options.configure?.(adapter);
  const router: TestRouter = new Router({
    adapter,
    clock,
    ...(options.defaultSelection ? {} : { selection: 'least-lag' as const }),
    ...options.router,
    monitorOptions: { ...QUIET_MONITOR, ...options.router?.monitorOptions },
  });
  const events = recordEvents(router);
  if (!options.skipReady) await clock.run(router.ready());
  // The monitor's start() schedules one probe per replica on a real 0 ms timer; let those land
  // now so they cannot re-sample in the middle of a test.
  await realDelay(5);
  const fixture: Fixture = {
    clock,
    adapter,
    router,
    events,
    read: (session, readOptions = {}) =>
      clock.run(
        router.readDetailed(session, async (connection) => `read on ${connection.target}`, {
          affinityKey: readOptions.affinityKey,
        }),
      ),
  };
  open.add(fixture);
  return fixture;
}

/** Close every fixture opened by the current test (use in afterEach). */
export async function closeFixtures(): Promise<void> {
  const fixtures = [...open];
  open.clear();
  for (const fixture of fixtures) {
    fixture.adapter.releaseAll();
    await fixture.router.close();
  }
}

function recordEvents(router: TestRouter): RecordedEvents {
  const events: RecordedEvents = {
    decision: [],
    wait: [],
    capRejected: [],
    retry: [],
    badToken: [],
    otherHistory: [],
    write: [],
  };
  router.events.on('decision', (e) => events.decision.push(e));
  router.events.on('wait', (e) => events.wait.push(e));
  router.events.on('cap-rejected', (e) => events.capRejected.push(e));
  router.events.on('retry', (e) => events.retry.push(e));
  router.events.on('bad-token', (e) => events.badToken.push(e));
  router.events.on('other-history', (e) => events.otherHistory.push(e));
  router.events.on('write', (e) => events.write.push(e));
  return events;
}

/** A session carrying `text` (`h.seq`) for cluster `default`, as if decoded from a token. */
export function sessionAt(text: string, cluster = 'default'): Session {
  return Session.fromToken({ positions: { [cluster]: text }, issuedAt: 0 });
}
