import { EngineError } from '../errors.js';
import { CHATML_TEMPLATE } from './chat.js';
import type { Tokenizer } from './types.js';

/** The special tokens of a ChatML + Hermes tool-calling chat, each one token. */
export const DEFAULT_SPECIAL_TOKENS = [
  '<|endoftext|>',
  '<|im_start|>',
  '<|im_end|>',
  '<tool_call>',
  '</tool_call>',
  '<tool_response>',
  '</tool_response>',
  '<think>',
  '</think>',
] as const;

export interface CharTokenizerOptions {
  /** Strings that each encode to ONE token, matched greedily (longest first) before bytes. */
  specialTokens?: readonly string[];
  /** The end-of-turn token; must be one of specialTokens. Default `<|im_end|>`. */
  eosToken?: string;
  /** The padding token; default `<|endoftext|>` when present. */
  padToken?: string;
  /** Jinja chat template; default ChatML. */
  chatTemplate?: string;
}

/**
 * Byte-level tokenizer for tiny models: ids 0..255 are the UTF-8 bytes, ids 256.. the special
 * tokens in the given order. Any text round-trips; a special token's text never splits.
 */
export class CharTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly eosTokenId: number;
  readonly padTokenId: number | undefined;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly chatTemplate: string;
  readonly eosToken: string;
  readonly padToken: string | undefined;
  readonly stopTokenIds: readonly number[];
  private readonly byFirstChar = new Map<string, string[]>();
  private readonly idToSpecial: string[];

  constructor(options: CharTokenizerOptions = {}) {
    const specials = [...(options.specialTokens ?? DEFAULT_SPECIAL_TOKENS)];
    if (new Set(specials).size !== specials.length || specials.some((s) => s.length === 0)) {
      throw new EngineError('TOKENIZER', 'special tokens must be distinct non-empty strings');
    }
    this.idToSpecial = specials;
    this.specialTokens = new Map(specials.map((s, i) => [s, 256 + i]));
    for (const s of [...specials].sort((a, b) => b.length - a.length)) {
      const first = s[0] as string;
      const list = this.byFirstChar.get(first) ?? [];
      list.push(s);
      this.byFirstChar.set(first, list);
    }
    this.vocabSize = 256 + specials.length;
    const eos = options.eosToken ?? '<|im_end|>';
    const eosId = this.specialTokens.get(eos);
    if (eosId === undefined)
      throw new EngineError('TOKENIZER', `eosToken ${eos} is not among the special tokens`);
    this.eosTokenId = eosId;
    this.eosToken = eos;
    this.stopTokenIds = [eosId];
    const pad = options.padToken ?? '<|endoftext|>';
    this.padTokenId = this.specialTokens.get(pad);
    this.padToken = this.padTokenId !== undefined ? pad : undefined;
    this.chatTemplate = options.chatTemplate ?? CHATML_TEMPLATE;
  }

  encode(text: string): number[] {
    const out: number[] = [];
    const encoder = new TextEncoder();
    let plainStart = 0;
    const flush = (end: number) => {
      if (end > plainStart) for (const b of encoder.encode(text.slice(plainStart, end))) out.push(b);
    };
    for (let i = 0; i < text.length; ) {
      const candidates = this.byFirstChar.get(text[i] as string);
      const hit = candidates?.find((s) => text.startsWith(s, i));
      if (hit) {
        flush(i);
        out.push(this.specialTokens.get(hit) as number);
        i += hit.length;
        plainStart = i;
      } else {
        i++;
      }
    }
    flush(text.length);
    return out;
  }

  decode(ids: readonly number[]): string {
    let text = '';
    let bytes: number[] = [];
    const decoder = new TextDecoder();
    const flush = () => {
      if (bytes.length > 0) text += decoder.decode(Uint8Array.from(bytes));
      bytes = [];
    };
    for (const id of ids) {
      if (id >= 0 && id < 256) bytes.push(id);
      else {
        flush();
        const s = this.idToSpecial[id - 256];
        if (s === undefined)
          throw new EngineError(
            'TOKENIZER',
            `token id ${id} is outside the vocabulary [0, ${this.vocabSize})`,
          );
        text += s;
      }
    }
    flush();
    return text;
  }

  tokenId(token: string): number | undefined {
    const special = this.specialTokens.get(token);
    if (special !== undefined) return special;
    const bytes = new TextEncoder().encode(token);
    return bytes.length === 1 ? bytes[0] : undefined;
  }
}

/** A byte-level tokenizer with ChatML/tool special tokens (see CharTokenizer). */
export function createCharTokenizer(options: CharTokenizerOptions = {}): CharTokenizer {
  return new CharTokenizer(options);
}
