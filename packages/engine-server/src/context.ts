import type { Tokenizer } from '@agentrl/engine';
import { EngineServerError } from './errors.js';
import type { ServerMetrics } from './metrics.js';
import type { ServedEngine } from './served-engine.js';
import type { TextCodec } from './text.js';

/** What every route plugin gets: the served engine and how to talk about it. */
export interface ServerContext {
  served: ServedEngine;
  tokenizer: Tokenizer;
  codec: TextCodec;
  /** the name clients send as `model` (`--served-model-name`) */
  modelName: string;
  metrics: ServerMetrics;
  /** ids that end generation unless ignore_eos */
  eosIds: readonly number[];
}

/** vLLM answers a request for a model it does not serve with 404 (`serving_engine.py` `_check_model`). */
export function checkModel(ctx: ServerContext, model: string | null | undefined): void {
  if (model !== undefined && model !== null && model !== ctx.modelName)
    throw new EngineServerError(
      'MODEL_NOT_FOUND',
      `The model \`${model}\` does not exist. This server serves \`${ctx.modelName}\`.`,
    );
}

export const now = () => Math.floor(Date.now() / 1000);
