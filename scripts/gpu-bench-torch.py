"""The PyTorch + transformers side of the GPU bench (scripts/gpu-check.sh): the same figures as
packages/engine/bench/gpu.bench-run.ts on the same GPU. Qwen3-0.6B's shape with random init in bf16,
SDPA attention, torch.optim.AdamW (eager, no compile); decode with model.generate at batch 1 and 64;
the GRPO token loss on materialised [T, V] logits at T = 16K, V = 152K. One JSON line per figure,
prefixed "TORCH_BENCH "."""
import json
import os
import time

import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

quick = os.environ.get("GPU_BENCH_QUICK") == "1"
peak = float(os.environ.get("GPU_PEAK_TFLOPS", "989"))


def report(**figure):
    print("TORCH_BENCH " + json.dumps(figure), flush=True)


def sync_time(fn, reps):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


cfg = Qwen3Config(
    vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=2 if quick else 28,
    num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
    rope_theta=1000000.0, tie_word_embeddings=True, attn_implementation="sdpa", torch_dtype=torch.bfloat16,
)
torch.manual_seed(0)
model = Qwen3ForCausalLM(cfg).to("cuda", dtype=torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
seq = 512 if quick else 4096
ids = torch.randint(0, cfg.vocab_size, (1, seq), device="cuda")


def train_step():
    opt.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()


dt = sync_time(train_step, 2 if quick else 5)
per_layer = 1024 * 16 * 128 * 2 + 1024 * 8 * 128 * 2 + 3 * 1024 * 3072
flops = 6 * (cfg.num_hidden_layers * per_layer + cfg.vocab_size * 1024) + 6 * cfg.num_hidden_layers * seq * 16 * 128
report(figure="train", seq=seq, tokensPerSecond=seq / dt, stepSeconds=dt, mfu=seq / dt * flops / (peak * 1e12))
del opt
torch.cuda.empty_cache()

model.eval()
for b in (1, 64):
    prompt = torch.randint(0, cfg.vocab_size, (b, 16), device="cuda")
    new = 8 if quick else 64
    with torch.no_grad():
        gen = lambda: model.generate(prompt, max_new_tokens=new, min_new_tokens=new, do_sample=True,
                                     temperature=0.7, top_p=0.95, top_k=0, pad_token_id=0)
        dt = sync_time(gen, 1)
    report(figure="decode", batch=b, tokensPerSecond=b * new / dt)
del model
torch.cuda.empty_cache()

T, V, H = (2048 if quick else 16384), 151936, 1024
h = (torch.randn(T, H, device="cuda") * 0.5).requires_grad_()
w = (torch.randn(V, H, device="cuda") * 0.02).requires_grad_()
tgt = torch.randint(0, V, (T,), device="cuda")
old = torch.full((T,), -11.0, device="cuda")
adv = torch.where(torch.arange(T, device="cuda") % 2 == 1, 1.0, -1.0)


def loss_step(precision):
    if precision == "bf16":  # bf16 tensor-core product, fp32 logits (as the engine's bf16 path)
        logits = (h.to(torch.bfloat16) @ w.to(torch.bfloat16).t()).float()
    else:
        logits = h @ w.t()  # materialised [T, V] fp32
    logp = torch.log_softmax(logits, dim=-1).gather(1, tgt[:, None])[:, 0]
    r = torch.exp(logp - old)
    loss = torch.max(-adv * r, -adv * torch.clamp(r, 0.8, 1.28)).mean()
    loss.backward()
    h.grad = None
    w.grad = None


for precision in ("fp32", "bf16"):
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    dt = sync_time(lambda: loss_step(precision), 3)
    report(figure="fused-linear-baseline", precision=precision, T=T, V=V, H=H, seconds=dt,
           peakExtraBytes=torch.cuda.max_memory_allocated() - base)
