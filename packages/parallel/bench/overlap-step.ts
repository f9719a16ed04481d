// One rank of the reduce-overlap bench (bench/run.ts starts it under `mpirun -n 2`): data-parallel
// SFT steps (forward, cross-entropy, backward of each micro-batch, the float64 gradient all-reduce,
// AdamW) of one model, alternating the blocking reduce and the overlapped one step by step so both
// see the same machine. Prints `RESULT {rank, params, buckets, allreduceMs, steps: {mode: ms[]}}`.
import { createAdamW, createModel, packSequences } from '@agentrl/engine';
import {
  createCommunicator,
  DEFAULT_BUCKET_BYTES,
  GradientAllReduce,
  runMicroBatches,
} from '../src/index.js';

const [hidden, layers, intermediate, vocab, tokens, steps] = (process.argv[2] ?? '64,2,128,256,256,5')
  .split(',')
  .map(Number) as [number, number, number, number, number, number];
const comm = createCommunicator();
const model = createModel(
  {
    architectures: ['Qwen3ForCausalLM'],
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: intermediate,
    num_hidden_layers: layers,
    num_attention_heads: Math.max(1, hidden / 64),
    num_key_value_heads: Math.max(1, hidden / 128),
    head_dim: 64,
    max_position_embeddings: tokens,
    tie_word_embeddings: true,
  },
  { seed: 3 },
);
const opt = createAdamW(model, { lr: 1e-4 });
const modes = {
  blocking: { overlap: false },
  overlapped: { overlap: true, bucketBytes: DEFAULT_BUCKET_BYTES },
} as const;

// 2 micro-batches per rank: the first accumulates, the second's backward overlaps the reduce
const micro = Array.from({ length: 2 * comm.size }, (_, b) => {
  const seqs = [0, 1].map((s) =>
    Array.from({ length: tokens / 2 }, (_, t) => (b * 31 + s * 7 + t * 13) % vocab),
  );
  const packed = packSequences(seqs);
  return { packed, mask: new Uint8Array(packed.tokenIds.length).fill(1) };
});
const targets = micro.reduce((n, m) => n + m.packed.tokenIds.length - 2, 0);

const times: Record<keyof typeof modes, number[]> = { blocking: [], overlapped: [] };
for (let step = 0; step <= steps; step++) {
  for (const mode of Object.keys(modes) as (keyof typeof modes)[]) {
    comm.barrier();
    const t0 = performance.now();
    runMicroBatches({ comm, model, count: micro.length, width: 1, reduce: modes[mode] }, (i) => [
      model.sftLoss(micro[i]!.packed, micro[i]!.mask, { normalizer: targets }).lossSum,
    ]);
    opt.step();
    comm.barrier();
    if (step > 0) times[mode].push(performance.now() - t0); // step 0 warms up
  }
}

// what there is to hide: one blocking all-reduce of the whole float64 accumulator
const acc = new Float64Array(model.numParameters);
const reduceMs: number[] = [];
for (let k = 0; k < 3; k++) {
  comm.barrier();
  const t0 = performance.now();
  comm.allreduceSum(acc);
  reduceMs.push(performance.now() - t0);
}
const reducer = new GradientAllReduce(model, comm, modes.overlapped);
process.stdout.write(
  `RESULT ${JSON.stringify({
    rank: comm.rank,
    size: comm.size,
    params: model.numParameters,
    buckets: reducer.buckets.length,
    overlapping: reducer.overlapping,
    tokensPerMicroBatch: tokens,
    microBatchesPerRank: micro.length / comm.size,
    allreduceMs: reduceMs,
    steps: times,
  })}\n`,
);
comm.finalize();
