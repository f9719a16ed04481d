import { Rng } from '@agentrl/protocol';

/**
 * Where the trainer is in its prompt stream. The order of an epoch is a pure function of
 * (seed, stage, epoch), so the cursor (epoch + offset, and the stage's pool when it was filtered)
 * is all a checkpoint needs to replay exactly the prompts an uninterrupted run would see.
 */
export interface DataCursor {
  stage: string;
  epoch: number;
  offset: number;
  /** Problem ids of a filtered stage (hardOnly), in pool order; null = the whole training split. */
  pool: string[] | null;
}

export function startCursor(stage: string, pool: string[] | null): DataCursor {
  return { stage, epoch: 0, offset: 0, pool };
}

/**
 * The next `count` distinct ids and the advanced cursor; wraps into a freshly shuffled epoch. A step
 * never holds one id twice (each trajectory's id, and so the engine's cache id, derives from it): a
 * pool smaller than `count` gives every id once, and an id the step already took from the end of
 * the last epoch is passed over at the start of the next.
 */
export function takeIds(
  cursor: DataCursor,
  allIds: readonly string[],
  count: number,
  seed: number,
): { ids: string[]; cursor: DataCursor } {
  const pool = cursor.pool ?? allIds;
  if (pool.length === 0) return { ids: [], cursor };
  const next = { ...cursor };
  const ids: string[] = [];
  const want = Math.min(count, pool.length);
  let order = epochOrder(pool, seed, next.stage, next.epoch);
  while (ids.length < want) {
    if (next.offset >= order.length) {
      next.epoch++;
      next.offset = 0;
      order = epochOrder(pool, seed, next.stage, next.epoch);
    }
    const id = order[next.offset++]!;
    if (!ids.includes(id)) ids.push(id);
  }
  return { ids, cursor: next };
}

function epochOrder(pool: readonly string[], seed: number, stage: string, epoch: number): string[] {
  return Rng.derive(seed, 'order', stage, epoch).shuffle([...pool]);
}
