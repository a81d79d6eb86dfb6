/**
 * Each replica's share of the reads a router started lately. Counts decay by halves every
 * `window` reads, so the shares follow the last few hundred reads, not the router's lifetime;
 * no clock, so the same reads give the same shares.
 */
export class RecentReadShares {
  private readonly counts = new Map<string, number>();
  private total = 0;

  /**
   * @param window reads between two halvings (the shares cover about the last `window` reads).
   * @param minimum reads counted before {@link RecentReadShares.share} answers at all.
   */
  constructor(
    private readonly window = 512,
    private readonly minimum = 32,
  ) {}

  /** A read started on replica `id`. */
  note(id: string): void {
    this.counts.set(id, (this.counts.get(id) ?? 0) + 1);
    this.total++;
    if (this.total < this.window) return;
    for (const [key, count] of this.counts) this.counts.set(key, count / 2);
    this.total /= 2;
  }

  /** The replica's share of recent reads, 0..1; undefined until `minimum` reads were counted. */
  share(id: string): number | undefined {
    if (this.total < this.minimum) return undefined;
    return (this.counts.get(id) ?? 0) / this.total;
  }
}
