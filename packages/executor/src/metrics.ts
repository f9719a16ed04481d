import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunResult } from './types.js';

/** Prometheus metrics of one server or worker process (its own registry: several may share a process). */
export class ExecutorMetrics {
  readonly registry = new Registry();
  private readonly calls = new Counter({
    name: 'agentrl_executor_calls_total',
    help: 'Calls answered, by status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'agentrl_executor_call_seconds',
    help: 'Time from request to answer',
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly cpu = new Counter({
    name: 'agentrl_executor_cpu_seconds_total',
    help: 'CPU time used by user code',
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({
    name: 'agentrl_executor_in_flight',
    help: 'Calls accepted and not answered',
    registers: [this.registry],
  });
  readonly rejected = new Counter({
    name: 'agentrl_executor_rejected_total',
    help: 'Requests refused with 503 because the queue was full',
    registers: [this.registry],
  });

  observe(r: RunResult, seconds: number): void {
    this.calls.inc({ status: r.status });
    this.latency.observe(seconds);
    if (r.cpuMs) this.cpu.inc(r.cpuMs / 1000);
  }
}
