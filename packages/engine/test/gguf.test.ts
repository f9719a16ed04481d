import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { llamaCppEntry, openLlamaCpp } from '../bench/llama-cpp.js';
import { packSequences } from '../src/batch.js';
import { exportGguf, permuteRopeRows } from '../src/export/gguf.js';
import { readGguf } from '../src/export/gguf-reader.js';
import { createModel } from '../src/model.js';
import { tinyConfig } from './helpers.js';

// Vocabulary 300 (room for the 259 special and byte tokens), GQA 4/2, head_dim 16, untied and tied.
const config = (tied: boolean, arch = 'LlamaForCausalLM') =>
  tinyConfig({
    architectures: [arch],
    vocab_size: 300,
    hidden_size: 64,
    intermediate_size: 96,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    tie_word_embeddings: tied,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
  });
const dir = mkdtempSync(join(tmpdir(), 'agentrl-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('GGUF export', () => {
  it('writes a v3 file whose metadata and fp32 tensors read back as written', () => {
    const model = createModel(config(false), { seed: 5, training: false });
    const path = join(dir, 'untied.gguf');
    exportGguf(model, path, { name: 'tiny' });
    const f = readGguf(path);
    expect(f.version).toBe(3);
    expect(f.metadata.get('general.architecture')).toBe('llama');
    expect(f.metadata.get('general.name')).toBe('tiny');
    expect(f.metadata.get('llama.block_count')).toBe(2);
    expect(f.metadata.get('llama.embedding_length')).toBe(64);
    expect(f.metadata.get('llama.attention.head_count_kv')).toBe(2);
    expect(f.metadata.get('llama.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-5, 10);
    const tokens = f.metadata.get('tokenizer.ggml.tokens') as string[];
    expect(tokens).toHaveLength(300);
    expect(tokens.slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
    expect((f.metadata.get('tokenizer.ggml.token_type') as number[])[13]).toBe(6);
    // 2 layers x 9 tensors + embedding + final norm + lm_head.
    expect(f.tensors.size).toBe(21);
    const emb = f.tensors.get('token_embd.weight');
    expect(emb?.shape).toEqual([300, 64]);
    expect(emb?.data).toEqual(model.parameter('model.embed_tokens.weight')?.data);
    expect(f.tensors.get('output.weight')?.data).toEqual(model.parameter('lm_head.weight')?.data);
    expect(f.tensors.get('blk.1.ffn_down.weight')?.shape).toEqual([64, 96]);
    expect(f.tensors.get('blk.1.ffn_down.weight')?.data).toEqual(
      model.parameter('model.layers.1.mlp.down_proj.weight')?.data,
    );
    // q/k rows move to llama.cpp's interleaved RoPE pairs: row 2i + j of a head is HF row j * 8 + i.
    const q = model.parameter('model.layers.0.self_attn.q_proj.weight')?.data ?? new Float32Array();
    const gq = f.tensors.get('blk.0.attn_q.weight')?.data ?? new Float32Array();
    const row = (w: Float32Array, r: number) => Array.from(w.subarray(r * 64, (r + 1) * 64));
    expect(row(gq, 16 + 2 * 3 + 1)).toEqual(row(q, 16 + 8 + 3));
    expect(row(gq, 16 + 2 * 3)).toEqual(row(q, 16 + 3));
    expect(f.tensors.get('blk.0.attn_k.weight')?.data).toEqual(
      permuteRopeRows(
        model.parameter('model.layers.0.self_attn.k_proj.weight')?.data ?? new Float32Array(),
        2,
        64,
      ),
    );
  });

  it('writes Qwen3 as qwen3 (q/k norms, rows not permuted) and Qwen2 as qwen2 (q/k/v biases)', () => {
    const q3 = createModel(config(false, 'Qwen3ForCausalLM'), { seed: 5, training: false });
    exportGguf(q3, join(dir, 'q3.gguf'));
    const f3 = readGguf(join(dir, 'q3.gguf'));
    expect(f3.metadata.get('general.architecture')).toBe('qwen3');
    expect(f3.metadata.get('qwen3.attention.key_length')).toBe(16);
    expect(f3.metadata.has('llama.block_count')).toBe(false);
    // 2 layers x 11 tensors (9 + q/k norms) + embedding + final norm + lm_head.
    expect(f3.tensors.size).toBe(25);
    expect(f3.tensors.get('blk.1.attn_k_norm.weight')?.shape).toEqual([16]);
    expect(f3.tensors.get('blk.0.attn_q.weight')?.data).toEqual(
      q3.parameter('model.layers.0.self_attn.q_proj.weight')?.data,
    );
    const q2 = createModel(config(true, 'Qwen2ForCausalLM'), { seed: 5, training: false });
    exportGguf(q2, join(dir, 'q2.gguf'));
    const f2 = readGguf(join(dir, 'q2.gguf'));
    expect(f2.metadata.get('general.architecture')).toBe('qwen2');
    expect(f2.metadata.get('qwen2.attention.head_count_kv')).toBe(2);
    expect(f2.tensors.get('blk.0.attn_v.bias')?.shape).toEqual([32]);
    expect(f2.tensors.size).toBe(2 * 12 + 2);
  });

  it('omits output.weight for tied embeddings and refuses what llama.cpp would run otherwise', () => {
    const tied = createModel(config(true), { seed: 5, training: false });
    exportGguf(tied, join(dir, 'tied.gguf'));
    expect(readGguf(join(dir, 'tied.gguf')).tensors.has('output.weight')).toBe(false);
    const biased = createModel(tinyConfig({ ...config(false), attention_bias: true }), {
      seed: 1,
      training: false,
    });
    expect(() => exportGguf(biased, join(dir, 'biased.gguf'))).toThrow(
      /LlamaForCausalLM with attention_bias does not export; .*Qwen3ForCausalLM do/,
    );
    const small = createModel(tinyConfig({ architectures: ['LlamaForCausalLM'] }), {
      seed: 1,
      training: false,
    });
    expect(() => exportGguf(small, join(dir, 'small.gguf'))).toThrow(
      /at least 259 ids .* pass options.tokens/,
    );
  });

  it('reports a truncated file by name', () => {
    const path = join(dir, 'cut.gguf');
    writeFileSync(path, Buffer.from('GGUF\x03\x00\x00\x00', 'latin1'));
    expect(() => readGguf(path)).toThrow(/cut\.gguf ends at byte 8/);
  });

  // Needs the peer install (see BENCHMARKS.md): AGENTRL_LLAMA_CPP=/work/peers/llama.
  it.skipIf(!llamaCppEntry(process.env.AGENTRL_LLAMA_CPP))(
    'llama.cpp loads the export and its logits for a prompt match the engine to 1e-4',
    async () => {
      for (const [tied, arch] of [
        [false, 'LlamaForCausalLM'],
        [true, 'LlamaForCausalLM'],
        [true, 'Qwen3ForCausalLM'],
        [false, 'Qwen2ForCausalLM'],
      ] as const) {
        const model = createModel(config(tied, arch), { seed: 9, training: false });
        if (arch === 'Qwen2ForCausalLM') {
          // Random init leaves biases at zero: give them values, so a misplaced bias shows.
          for (const p of model.parameters())
            if (p.name.endsWith('.bias'))
              for (let i = 0; i < p.data.length; i++) p.data[i] = 0.05 * Math.sin(i + 1);
          model.markWeightsChanged();
        }
        const path = join(dir, `peer-${arch}-${tied}.gguf`);
        exportGguf(model, path);
        const opened = await openLlamaCpp(path);
        if (!opened.llama) throw new Error(opened.reason);
        try {
          const prompt = Array.from({ length: 23 }, (_, t) => (t * 37 + 11) % 300);
          const ours = model.forwardLogits(packSequences([prompt])).subarray(22 * 300);
          const theirs = await opened.llama.logits(prompt);
          expect(theirs).toHaveLength(300);
          let worst = 0;
          for (let j = 0; j < 300; j++) worst = Math.max(worst, Math.abs((ours[j] ?? 0) - (theirs[j] ?? 0)));
          expect(worst).toBeLessThan(1e-4);
          expect(Math.max(...ours)).toBeGreaterThan(1e-2); // the logits are not trivially zero
        } finally {
          await opened.llama.dispose();
        }
      }
    },
  );
});
