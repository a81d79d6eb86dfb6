/**
 * Remembers which keys were already seen, forgetting the oldest beyond `capacity`, so a flood
 * of bad tokens from many sources costs bounded memory (and at worst repeats a log line).
 */
export class OncePerKey {
  private readonly seen = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** True the first time `key` is offered (or after it was forgotten). */
  first(key: string): boolean {
    if (this.seen.has(key)) return false;
    if (this.seen.size >= this.capacity) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    this.seen.add(key);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
