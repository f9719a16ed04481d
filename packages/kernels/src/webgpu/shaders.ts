/**
 * WGSL for the two row passes. WGSL lets implementations assume no infinities, so -inf logits are
 * replaced by NEG_BIG on upload (see webgpu-policy-loss.ts) and the running max starts at a finite
 * sentinel; everything else mirrors the CUDA/HIP kernels: one workgroup per row, per-thread online
 * (max, sum, entropy sum), a shared-memory tree merge.
 */
export const WORKGROUP = 256;
export const NEG_BIG = -1e30;

const params = /* wgsl */ `
struct Params { V: u32, rows: u32, rowBase: u32, entropy: u32, invTau: f32, p0: f32, p1: f32, p2: f32 }
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<i32>;
fn rowIndex(wid: vec3u, nwg: vec3u) -> u32 { return wid.x + wid.y * nwg.x; }
`;

export const ROW_STATS_WGSL = /* wgsl */ `${params}
@group(0) @binding(3) var<storage, read_write> stats: array<f32>; // per global row: max, log s, logp, entropy
var<workgroup> sm: array<f32, ${WORKGROUP}>;
var<workgroup> ss: array<f32, ${WORKGROUP}>;
var<workgroup> su: array<f32, ${WORKGROUP}>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = rowIndex(wid, nwg);
  if (r >= P.rows) { return; }
  let base = r * P.V;
  var m = -3.0e38;
  var s = 0.0;
  var u = 0.0;
  for (var j = lid; j < P.V; j += ${WORKGROUP}u) {
    let z = logits[base + j] * P.invTau;
    if (z > m) {
      let k = exp(m - z);
      u = (u + s * (m - z)) * k;
      s = s * k + 1.0;
      m = z;
    } else {
      let e = exp(z - m);
      s += e;
      u += e * (z - m);
    }
  }
  sm[lid] = m; ss[lid] = s; su[lid] = u;
  workgroupBarrier();
  for (var stride = ${WORKGROUP / 2}u; stride > 0u; stride = stride / 2u) {
    if (lid < stride) {
      let m1 = sm[lid]; let m2 = sm[lid + stride];
      let s1 = ss[lid]; let s2 = ss[lid + stride];
      let mm = max(m1, m2);
      let k1 = exp(m1 - mm); let k2 = exp(m2 - mm);
      su[lid] = (su[lid] + s1 * (m1 - mm)) * k1 + (su[lid + stride] + s2 * (m2 - mm)) * k2;
      ss[lid] = s1 * k1 + s2 * k2;
      sm[lid] = mm;
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    let g = P.rowBase + r;
    // max and log s stay apart: (z - max) - log s keeps its precision when |z| is large
    let ls = log(ss[0]);
    stats[4u * g] = sm[0];
    stats[4u * g + 1u] = ls;
    stats[4u * g + 2u] = (logits[base + u32(targets[g])] * P.invTau - sm[0]) - ls;
    stats[4u * g + 3u] = select(0.0, ls - su[0] / ss[0], P.entropy == 1u);
  }
}
`;

export const ROW_GRAD_WGSL = /* wgsl */ `${params}
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> gOverTau: array<f32>;
@group(0) @binding(5) var<storage, read_write> dlogits: array<f32>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) lid: u32) {
  let r = rowIndex(wid, nwg);
  if (r >= P.rows) { return; }
  let base = r * P.V;
  let g = P.rowBase + r;
  let m = stats[4u * g];
  let ls = stats[4u * g + 1u];
  let gt = gOverTau[g];
  let tgt = u32(targets[g]);
  for (var j = lid; j < P.V; j += ${WORKGROUP}u) {
    let v = -gt * exp((logits[base + j] * P.invTau - m) - ls);
    dlogits[base + j] = select(v, v + gt, j == tgt);
  }
}
`;
