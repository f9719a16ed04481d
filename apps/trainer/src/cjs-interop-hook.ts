/**
 * Node module hooks, registered by bin.ts before anything else loads. Work-around: @agentrl/rollout
 * does `import { onnx } from 'onnx-proto'`, a named import from a CommonJS module whose exports
 * Node cannot detect, so plain `node` (unlike vitest) refuses to start. This serves onnx-proto
 * through a tiny ES-module wrapper that re-exports `onnx`. Delete it once rollout imports the default.
 */
const PREFIX = 'agentrl-interop:';
const WRAPPED = new Set(['onnx-proto']);

interface ResolveResult {
  url: string;
  format?: string | null;
  shortCircuit?: boolean;
}
type NextResolve = (specifier: string, context: { parentURL?: string }) => Promise<ResolveResult>;
type NextLoad = (
  url: string,
  context: unknown,
) => Promise<{ format: string; source?: unknown; shortCircuit?: boolean }>;

export async function resolve(
  specifier: string,
  context: { parentURL?: string },
  next: NextResolve,
): Promise<ResolveResult> {
  if (WRAPPED.has(specifier) && !context.parentURL?.startsWith(PREFIX)) {
    const real = await next(specifier, context);
    return { url: `${PREFIX}${encodeURIComponent(real.url)}`, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url: string, context: unknown, next: NextLoad) {
  if (url.startsWith(PREFIX)) {
    const real = decodeURIComponent(url.slice(PREFIX.length));
    const source = `import m from ${JSON.stringify(real)};\nexport const onnx = m.onnx;\nexport default m;\n`;
    return { format: 'module', source, shortCircuit: true };
  }
  return next(url, context);
}
