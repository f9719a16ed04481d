import { createAdamW, createCharTokenizer, createModel, type Model, packSequences } from '@agentrl/engine';
import { createChatFormat, wrapToolResponse } from '../../src/chat-format.js';

export const tokenizer = createCharTokenizer();
export const chatFormat = createChatFormat();
export const QUESTION = [{ role: 'user' as const, content: 'What is 6*7?' }];
export const TOOL_CALL = '<tool_call>{"name":"python","arguments":{"code":"print(6*7)"}}</tool_call>';
export const ANSWER = 'The answer is 42.<|im_end|>';

/**
 * A tiny real model taught, by a few hundred SFT steps on the native engine, to call the Python
 * tool for "What is 6*7?" and then answer from the tool's output — so rollout tests drive the real
 * engine through a real tool turn instead of a scripted one.
 */
export function trainToolModel(seed = 1): Model {
  const model = createModel(
    {
      architectures: ['Qwen3ForCausalLM'],
      vocab_size: tokenizer.vocabSize,
      hidden_size: 64,
      intermediate_size: 128,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 16,
      max_position_embeddings: 512,
      tie_word_embeddings: true,
      initializer_range: 0.05,
    },
    { seed },
  );
  const prompt = tokenizer.encode(chatFormat.renderPrompt(QUESTION));
  const call = tokenizer.encode(TOOL_CALL);
  const response = tokenizer.encode(chatFormat.toolResponseSegment(TOOL_CALL, wrapToolResponse('42')));
  const answer = tokenizer.encode(ANSWER);
  const ids = [...prompt, ...call, ...response, ...answer];
  const mask = [
    ...prompt.map(() => 0),
    ...call.map(() => 1),
    ...response.map(() => 0),
    ...answer.map(() => 1),
  ];
  const batch = packSequences([ids]);
  const opt = createAdamW(model, { lr: 1e-2, weightDecay: 0, warmupSteps: 10 });
  for (let step = 0; step < 300; step++) {
    const { loss } = model.sftLoss(batch, mask);
    opt.step();
    if (loss < 0.002) break;
  }
  return model;
}
