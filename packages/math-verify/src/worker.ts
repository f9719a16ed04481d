import { parentPort } from 'node:worker_threads';
import { warmCas } from './cas.js';
import type { VerifyOptions } from './config.js';
import { verify } from './verify.js';

/** Worker side of `verifyBatchIsolated`: verifies items in order, one message per result. */
interface Job {
  items: { gold: string; response: string }[];
  opts: Partial<VerifyOptions>;
}

parentPort?.on('message', (job: Job) => {
  if (job.opts.casFallback) warmCas();
  job.items.forEach((it, i) => {
    parentPort?.postMessage({ i, result: verify(it.gold, it.response, job.opts) });
  });
  parentPort?.postMessage({ done: true });
});
