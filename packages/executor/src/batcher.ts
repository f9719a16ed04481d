/** Collects items and flushes them in batches of at most `size`, or after `lingerMs`, whichever first. */
export class Batcher<T> {
  private items: T[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly size: number,
    private readonly lingerMs: number,
    private readonly flush: (batch: T[]) => void,
  ) {}

  push(item: T): void {
    this.items.push(item);
    if (this.items.length >= this.size) this.drain();
    else this.timer ??= setTimeout(() => this.drain(), this.lingerMs);
  }

  /** Flushes what is waiting now. */
  drain(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.items.length > 0) this.flush(this.items.splice(0, this.size));
  }
}
