import { describe, expect, it } from 'vitest';
import { formatSample, metricSum, parsePrometheus } from './prometheus.js';

describe('parsePrometheus', () => {
  it('reads vLLM gauges and the labels of cache_config_info', () => {
    const text = [
      '# HELP vllm:num_requests_running Number of requests in model execution batches.',
      '# TYPE vllm:num_requests_running gauge',
      'vllm:num_requests_running{engine="0",model_name="m"} 3.0',
      'vllm:num_requests_running{engine="1",model_name="m"} 2.0',
      'vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25',
      'vllm:cache_config_info{block_size="16",cache_dtype="auto",num_gpu_blocks="661",prefix_caching_hash_algo="sha\\"256"} 1.0',
    ].join('\n');
    const s = parsePrometheus(text);
    expect(metricSum(s, 'vllm:num_requests_running')).toBe(5);
    expect(metricSum(s, 'vllm:kv_cache_usage_perc')).toBe(0.25);
    expect(metricSum(s, 'vllm:num_requests_waiting')).toBeNull();
    const info = s.find((x) => x.name === 'vllm:cache_config_info')!;
    expect(info.labels).toMatchObject({
      block_size: '16',
      num_gpu_blocks: '661',
      prefix_caching_hash_algo: 'sha"256',
    });
  });

  it('round-trips what formatSample writes', () => {
    const line = formatSample('a:b', { x: 'q"uote', n: 2 }, 1.5);
    expect(parsePrometheus(line)).toEqual([{ name: 'a:b', labels: { x: 'q"uote', n: '2' }, value: 1.5 }]);
  });
});
