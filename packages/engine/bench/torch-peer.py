"""PyTorch CPU peer of the engine's Qwen3-shape bench (qwen3.bench-run.ts): the same model shape
in plain torch (fp32, random init, tied embeddings, q/k norms, GQA, rotate-half RoPE), timed on the
same work as the engine.

  python3 torch-peer.py train '{"seqs": 2, "len": 256, "steps": 1}'   # one JSON line, then exits
  python3 torch-peer.py serve                                         # decode requests on stdin

`serve` reads one JSON request per line ({"batch": 8, "new": 16, "prompt": 32}) and answers one JSON
line each; it prints {"ready": ...} first. Greedy decoding with a KV cache (as llama.cpp's side).
The BLAS torch's products run on is named in every answer (`blas`, read from /proc/self/maps).
"""

import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("TORCH_PEER_THREADS", "2")))
CFG = json.loads(os.environ.get("TORCH_PEER_CONFIG", "{}")) or {
    "vocab": 151936,
    "hidden": 1024,
    "intermediate": 3072,
    "layers": 28,
    "heads": 16,
    "kv_heads": 8,
    "head_dim": 128,
    "rope_theta": 1e6,
    "eps": 1e-6,
}


def blas_in_use():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            if any(k in base for k in ("blas", "mkl", "blis")):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def require_tuned_blas():
    """Refuses the reference BLAS: Debian's torch loads it when no optimised one is installed, and a
    baseline on it is ~30x slower than on OpenBLAS (a straw man, not a peer)."""
    libs = blas_in_use()
    # Debian's reference BLAS is the `libblas.so.3` alternative in .../blas/; a tuned one installs its own.
    reference = [l for l in libs if os.path.basename(os.path.dirname(l)) == "blas" and "libblas.so" in l]
    if reference and os.environ.get("TORCH_PEER_ALLOW_REFERENCE_BLAS") != "1":
        sys.exit(
            f"torch-peer.py: PyTorch loaded the reference BLAS ({', '.join(reference)}), so its figures would "
            "not be an honest baseline; install an optimised one (apt-get install libopenblas0-openmp) and run "
            "again, or set TORCH_PEER_ALLOW_REFERENCE_BLAS=1 to measure it anyway"
        )


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Qwen3(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        H, d, I = c["hidden"], c["head_dim"], c["intermediate"]
        qd, kd = c["heads"] * d, c["kv_heads"] * d
        p = lambda *shape: torch.nn.Parameter(torch.randn(*shape) * 0.02)
        ones = lambda n: torch.nn.Parameter(torch.ones(n))
        self.embed = p(c["vocab"], H)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["layers"]):
            m = torch.nn.Module()
            m.ln1, m.ln2, m.qn, m.kn = ones(H), ones(H), ones(d), ones(d)
            m.wq, m.wk, m.wv, m.wo = p(qd, H), p(kd, H), p(kd, H), p(H, qd)
            m.gate, m.up, m.down = p(I, H), p(I, H), p(H, I)
            self.layers.append(m)
        self.norm = ones(H)
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        ang = torch.arange(8192, dtype=torch.float64)[:, None] * inv[None, :]
        self.cos, self.sin = ang.cos().float(), ang.sin().float()

    def forward(self, tokens, start=0, cache=None):
        """tokens [B, T] at positions start..start+T; cache: list of [k, v] per layer (grows)."""
        c = self.c
        B, T = tokens.shape
        nh, nkv, d, eps = c["heads"], c["kv_heads"], c["head_dim"], c["eps"]
        cos = self.cos[start : start + T][None, None]
        sin = self.sin[start : start + T][None, None]
        x = self.embed[tokens]
        for li, m in enumerate(self.layers):
            h = rms(x, m.ln1, eps)
            q = rms((h @ m.wq.t()).view(B, T, nh, d), m.qn, eps).transpose(1, 2)
            k = rms((h @ m.wk.t()).view(B, T, nkv, d), m.kn, eps).transpose(1, 2)
            v = (h @ m.wv.t()).view(B, T, nkv, d).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            if cache is not None:
                if len(cache) <= li:
                    cache.append([k, v])
                else:
                    cache[li][0] = torch.cat((cache[li][0], k), dim=2)
                    cache[li][1] = torch.cat((cache[li][1], v), dim=2)
                k, v = cache[li]
            k = k.repeat_interleave(nh // nkv, dim=1)
            v = v.repeat_interleave(nh // nkv, dim=1)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
            if T > 1:
                S = k.shape[2]
                mask = torch.ones(T, S, dtype=torch.bool).triu(S - T + 1)
                s = s.masked_fill(mask, float("-inf"))
            a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, nh * d)
            x = x + a @ m.wo.t()
            h = rms(x, m.ln2, eps)
            x = x + (F.silu(h @ m.gate.t()) * (h @ m.up.t())) @ m.down.t()
        return rms(x, self.norm, eps) @ self.embed.t()


def ids(n, salt, vocab):
    return [(i * 7919 + salt * 104729) % min(vocab, 150000) for i in range(n)]


def train(req):
    torch.manual_seed(1)
    model = Qwen3(CFG)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    seqs, length = req.get("seqs", 2), req.get("len", 256)
    tokens = torch.tensor([ids(length, s + 1, CFG["vocab"]) for s in range(seqs)])
    out = {"fwd_bwd_s": [], "adamw_s": []}
    for step in range(1 + req.get("steps", 1)):
        t0 = time.perf_counter()
        # All seqs x len tokens forward (as the engine's packed batch), each predicting the next.
        logits = model(tokens)[:, :-1]
        loss = F.cross_entropy(logits.reshape(-1, CFG["vocab"]), tokens[:, 1:].reshape(-1))
        loss.backward()
        t1 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=False)
        t2 = time.perf_counter()
        if step > 0:  # the first step warms up (allocates gradients and moments)
            out["fwd_bwd_s"].append(t1 - t0)
            out["adamw_s"].append(t2 - t1)
    return out


@torch.no_grad()
def decode(model, req):
    batch, new, prompt = req["batch"], req["new"], req.get("prompt", 32)
    vocab = CFG["vocab"]
    prompts = torch.tensor([[(i * 31 + t * 3) % vocab for t in range(prompt)] for i in range(batch)])
    cache = []
    t0 = time.perf_counter()
    nxt = model(prompts, 0, cache)[:, -1].argmax(-1, keepdim=True)
    prefill = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    for step in range(new):
        nxt = model(nxt, prompt + step, cache)[:, -1].argmax(-1, keepdim=True)
    dt = time.perf_counter() - t0
    return {
        "decodeTokensPerS": batch * new / dt,
        "decodeCpuMsPerStep": 1000 * (time.process_time() - cpu0) / new,
        "prefillTokensPerS": batch * prompt / prefill,
    }


def main():
    require_tuned_blas()
    meta = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    if sys.argv[1] == "train":
        req = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
        out = train(req)
        print(json.dumps({**meta, **out, "blas": blas_in_use()}), flush=True)
        return
    torch.manual_seed(3)
    model = Qwen3(CFG).eval()
    print(json.dumps({"ready": True, **meta, "blas": blas_in_use()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        print(json.dumps(decode(model, json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
