import type { ReplicaSample } from '../databases/types.js';

export type { ReplicaSample } from '../databases/types.js';

/**
 * The lab router's monitor: samples the replica's applied position and lag on a timer. Routing
 * reads the latest sample and never waits for a fresher one.
 */
export class ReplicaSampler<Pos> {
  private latest: ReplicaSample<Pos> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight: Promise<void> | undefined;

  /** `takeSample` resolves undefined when the replica has no position to report. */
  constructor(
    private readonly takeSample: () => Promise<ReplicaSample<Pos> | undefined>,
    private readonly intervalMs: number,
  ) {}

  /** Take the first sample, then keep sampling every `intervalMs`. */
  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
  }

  /** The latest sample; undefined while the replica has never answered. */
  current(): ReplicaSample<Pos> | undefined {
    return this.latest;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
  }

  private sample(): Promise<void> {
    // One sample at a time: a slow replica must not pile up queries.
    this.inFlight ??= this.takeSample()
      .then((sample) => {
        this.latest = sample;
      })
      .catch(() => {
        // An unreachable replica has no trustworthy sample: route to the primary until it answers.
        this.latest = undefined;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}
