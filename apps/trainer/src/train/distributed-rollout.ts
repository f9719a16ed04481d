import type { MicroBatch } from '@agentrl/grpo';
import { broadcastJson, type Communicator, scatterJson, shardIndices } from '@agentrl/parallel';
import type { TrainConfig } from '../config/schema.js';

/**
 * `--engine` under mpirun: rank 0 alone talks to the servers (rollouts, the tokenizer check, weight
 * syncs); the other ranks never open a connection to them and train on what rank 0 sends.
 */
export function leadRollsOut(cfg: TrainConfig, comm: Pick<Communicator, 'size'>): boolean {
  return comm.size > 1 && Boolean(cfg.engine.url);
}

/** What every rank needs of a step that rank 0 rolled out, besides its micro-batches. */
export interface StepHeader {
  /** The rollout side of the step's metrics (reward, RoC, lengths, timings): rank 0's, for every rank. */
  metrics: Record<string, number>;
  solvedAll: string[];
  notSolvedAll: string[];
  /** Micro-batches in the step (0: nothing to train on). */
  count: number;
  /** The global normalisers of the loss (token-mean needs the whole step's loss tokens). */
  totals: StepTotals;
}

export interface StepTotals {
  tokenCount: number;
  seqCount: number;
}

/** The step's loss normalisers over ALL its micro-batches (what policyStep divides by on every rank). */
export function stepTotals(microBatches: readonly MicroBatch[]): StepTotals {
  let tokenCount = 0;
  let seqCount = 0;
  for (const mb of microBatches) {
    seqCount += mb.cuSeqlens.length - 1;
    for (let s = 0; s + 1 < mb.cuSeqlens.length; s++) {
      for (let t = mb.cuSeqlens[s]! + 1; t < mb.cuSeqlens[s + 1]!; t++) if (mb.lossMask[t]) tokenCount++;
    }
  }
  return { tokenCount, seqCount };
}

/** One rank's view of the step: the header and micro-batch i where i % size === rank, else a hole. */
export interface SharedStep {
  header: StepHeader;
  microBatches: (MicroBatch | undefined)[];
}

/**
 * Rank 0 (with `lead`) broadcasts the step's header and deals micro-batch i to rank i % size, the
 * share runMicroBatches gives that rank, so each micro-batch crosses the wire once; every other rank
 * passes undefined and gets its share. Collective: every rank calls it once per step.
 */
export function shareStep(
  comm: Communicator,
  lead: { header: StepHeader; microBatches: readonly MicroBatch[] } | undefined,
): SharedStep {
  const header = broadcastJson(comm, lead?.header);
  const count = header.count;
  const parts =
    comm.rank === 0
      ? Array.from({ length: comm.size }, (_, r) =>
          shardIndices(count, { rank: r, size: comm.size }).map((i) => lead!.microBatches[i]!),
        )
      : undefined;
  const mine = scatterJson<MicroBatch[]>(comm, parts);
  if (comm.rank === 0) return { header, microBatches: [...lead!.microBatches] };
  const microBatches: (MicroBatch | undefined)[] = new Array(count).fill(undefined);
  shardIndices(count, comm).forEach((i, k) => {
    microBatches[i] = mine[k];
  });
  return { header, microBatches };
}
