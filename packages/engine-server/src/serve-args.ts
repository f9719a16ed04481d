/** Flags of `agentrl serve` and `agentrl-engine-server`. */
import { parseArgs } from 'node:util';
import type { ServeOptions } from './serve.js';

const USAGE = `usage: agentrl-engine-server --checkpoint DIR [--host 127.0.0.1] [--port 8000]
                             [--served-model-name NAME] [--max-batch 64] [--kv-capacity-tokens N]`;

/** Parses `serve` flags; shared by this bin and `agentrl serve`. */
export function parseServeArgs(argv: string[]): ServeOptions | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      checkpoint: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'served-model-name': { type: 'string' },
      'max-batch': { type: 'string' },
      'kv-capacity-tokens': { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) return null;
  if (!values.checkpoint) throw new Error(`--checkpoint DIR is required\n${USAGE}`);
  const int = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${v}`);
    return n;
  };
  const port = int('port', values.port);
  const maxBatch = int('max-batch', values['max-batch']);
  const kv = int('kv-capacity-tokens', values['kv-capacity-tokens']);
  return {
    checkpoint: values.checkpoint,
    ...(values.host !== undefined ? { host: values.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(values['served-model-name'] !== undefined ? { servedModelName: values['served-model-name'] } : {}),
    ...(maxBatch !== undefined ? { maxBatch } : {}),
    ...(kv !== undefined ? { kvCapacityTokens: kv } : {}),
  };
}

export { USAGE as SERVE_USAGE };
