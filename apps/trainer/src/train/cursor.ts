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

/** The next `count` ids and the advanced cursor; wraps into a freshly shuffled epoch. */
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
  let order = epochOrder(pool, seed, next.stage, next.epoch);
  while (ids.length < count) {
    if (next.offset >= order.length) {
      next.epoch++;
      next.offset = 0;
      order = epochOrder(pool, seed, next.stage, next.epoch);
    }
    ids.push(order[next.offset++]!);
  }
  return { ids, cursor: next };
}

function epochOrder(pool: readonly string[], seed: number, stage: string, epoch: number): string[] {
  return Rng.derive(seed, 'order', stage, epoch).shuffle([...pool]);
}
