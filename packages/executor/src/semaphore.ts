/** A FIFO counting semaphore: caps concurrent calls without dropping any. */
export class Semaphore {
  private readonly waiters: (() => void)[] = [];

  constructor(private available: number) {}

  async acquire(): Promise<void> {
    if (this.available > 0) {
      this.available--;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.available++;
  }

  get queued(): number {
    return this.waiters.length;
  }
}
