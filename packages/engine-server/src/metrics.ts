import { Counter, Gauge, Registry } from 'prom-client';
import type { ServedEngine } from './served-engine.js';

/**
 * The Prometheus metrics vLLM exports under the names its clients (and agentrl's adapter) read
 * (`vllm/v1/metrics/loggers.py`): requests running and waiting count generation requests only,
 * read from the engine at scrape time, so the scrape itself is never counted.
 */
export class ServerMetrics {
  readonly registry = new Registry();

  constructor(served: ServedEngine, modelName: string, kv: { blockSize: number; capacityTokens: number }) {
    const labels = { model_name: modelName, engine: '0' };
    new Gauge({
      name: 'vllm:num_requests_running',
      help: 'Number of requests in model execution batches.',
      labelNames: ['model_name', 'engine'],
      registers: [this.registry],
      collect() {
        this.set(labels, served.running);
      },
    });
    new Gauge({
      name: 'vllm:num_requests_waiting',
      help: 'Number of requests waiting to be processed.',
      labelNames: ['model_name', 'engine'],
      registers: [this.registry],
      async collect() {
        this.set(labels, served.waiting + ((await served.engine.load()).waiting ?? 0));
      },
    });
    new Gauge({
      name: 'vllm:kv_cache_usage_perc',
      help: 'KV-cache usage. 1 means 100 percent usage.',
      labelNames: ['model_name', 'engine'],
      registers: [this.registry],
      async collect() {
        this.set(labels, (await served.engine.load()).kvUsage ?? 0);
      },
    });
    new Counter({
      name: 'vllm:generation_tokens_total',
      help: 'Number of generation tokens processed.',
      labelNames: ['model_name', 'engine'],
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(labels, served.generatedTokens);
      },
    });
    const info = new Gauge({
      name: 'vllm:cache_config_info',
      help: 'Information of the LLMEngine CacheConfig',
      labelNames: ['block_size', 'num_gpu_blocks', 'enable_prefix_caching', 'cache_dtype'],
      registers: [this.registry],
    });
    info.set(
      {
        block_size: String(kv.blockSize),
        num_gpu_blocks: String(Math.floor(kv.capacityTokens / kv.blockSize)),
        enable_prefix_caching: 'True',
        cache_dtype: 'auto',
      },
      1,
    );
  }
}
