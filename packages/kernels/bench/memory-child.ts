// One memory measurement per process, so peak RSS belongs to one variant:
//   fused T V H  -> fused-linear loss on hidden [T, H] and weight [V, H]
//   full  T V H  -> the same buffers plus full [T, V] logits, policy loss on them in place
// The `full` run skips the two GEMMs around the loss (they allocate nothing beyond these buffers),
// so its peak is a lower bound for any full-logits implementation. Prints one JSON line.
import { readFileSync } from 'node:fs';
import { fusedLinearPolicyLoss, policyLossSync } from '../src/index.js';
import { benchInputs } from './inputs.js';

const [variant, Ts, Vs, Hs] = process.argv.slice(2);
const T = Number(Ts);
const V = Number(Vs);
const H = Number(Hs);
const tok = benchInputs(T, 1);
const targets = tok.targets.map((_, t) => (t * 7919) % V);
const fill = (a: Float32Array, s: number) => {
  for (let i = 0; i < a.length; i++) a[i] = (((i * 2654435761) >>> 8) / (1 << 24) - 0.5) * s;
  return a;
};
const hidden = fill(new Float32Array(T * H), 1);
const weight = fill(new Float32Array(V * H), 0.05);
// VmHWM (peak RSS of this address space) and not getrusage's ru_maxrss: Linux carries ru_maxrss
// across fork + exec, so a child of a big parent would report the parent's peak.
const hwm = () =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024;
const base = hwm();
const t0 = performance.now();
let extra = 0;
if (variant === 'fused') {
  const r = fusedLinearPolicyLoss({ ...tok, targets, hidden, weight, hiddenSize: H, vocabSize: V });
  extra = r.workspaceBytes ?? 0;
} else {
  const dHidden = fill(new Float32Array(T * H), 0);
  const dWeight = fill(new Float32Array(V * H), 0);
  const logits = fill(new Float32Array(T * V), 3);
  policyLossSync({ ...tok, targets, logits, vocabSize: V }, { inPlace: true });
  if (dHidden.length + dWeight.length === 0) throw new Error('unreachable: keeps both buffers alive');
}
const seconds = (performance.now() - t0) / 1000;
console.log(
  JSON.stringify({
    variant,
    T,
    V,
    H,
    peakRssBytes: hwm(),
    rssBeforeBytes: base,
    workspaceBytes: extra,
    seconds,
  }),
);
