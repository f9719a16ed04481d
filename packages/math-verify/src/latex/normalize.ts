import { PERCENT_WORDS, UNIT_AFTER_NUMBER } from './units.js';

/**
 * String-level clean-up of one extracted answer before tokenising: currency and dollar signs,
 * degrees, thousands separators, percent words, unit words, mixed numbers, "and"/"or" between
 * answers. Each rule is a single linear regex pass over a bounded string.
 */
/** 0.\overline{3} = 1/3, 1.2\overline{45}: a repeating decimal as an exact fraction. */
function repeating(_m: string, int: string, fixed: string, rep: string): string {
  const den = (10n ** BigInt(rep.length) - 1n) * 10n ** BigInt(fixed.length);
  const num = BigInt(`${int || '0'}${fixed}${rep}`) - BigInt(`${int || '0'}${fixed}`);
  return `(\\frac{${num}}{${den}})`;
}

// Every rule is linear on its own: a repeated subpattern that could start at each character of a
// long run is pinned by a lookbehind (one start per run), and inputs are capped (LIMITS.maxAnswerChars).
const RULES: [RegExp, string | ((...a: string[]) => string)][] = [
  // control characters (a tab from a broken "\t" escape, NUL...) carry no maths
  [/(?![\n\t])\p{Cc}/gu, ' '],
  // a doubled backslash before a command is an escaping accident (\\frac), not a line break
  [/(?<!\\)\\\\(?=[A-Za-z])/g, '\\'],
  [/\\n(?![A-Za-z])/g, ' '],
  [/\\\$/g, ''],
  [/\$/g, ' '],
  [/\\(?:dfrac|tfrac|cfrac)(?![A-Za-z])/g, '\\frac'],
  [/(?<!\d)(\d*)\.(\d*)\\overline\s*\{(\d+)\}/g, repeating],
  [/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|°|\\degree(?![A-Za-z])/g, ''],
  [/\^\s*\{\s*\\prime\s*\}|\^\s*\\prime/g, "'"],
  // 14{,}916 and 11,\!111,\!100: thousands separators
  [/(\d)\s*\{\s*,\s*\}\s*(?=\d)/g, '$1'],
  [/(\d),\s*\\!\s*(?=\d{3})/g, '$1'],
  [/(?<![\d.,([{])([1-9]\d{0,2})((?:,\d{3})+)(?![\d,)\]])/g, '$1$2:THOUSANDS'],
  [PERCENT_WORDS, '%'],
  [/(\\(?:text|mbox|textnormal|textrm|mathrm|textbf)\{[^{}]*\})\s*\^\s*\{?[23]\}?/g, '$1'],
  [UNIT_AFTER_NUMBER, ''],
  [/\binfinity\b/gi, '\\infty '],
  // 3\frac{1}{2} is a mixed number, not a product
  [/(?<![\d.}^_])(\d+)\s*\\frac\s*\{(\d+)\}\s*\{(\d+)\}/g, '($1+\\frac{$2}{$3})'],
  [/(?<![\d.}^_])(\d+)\s*\\frac\s*(\d)(\d)(?!\d)/g, '($1+\\frac{$2}{$3})'],
  [/(?<!\s)\s+(?:and|or)\s+/gi, ' , '],
  [/\)\s*(?:and|or)\s*\(/g, '),('],
  [/^(?:[\s,;:]|\.(?!\d))+|(?<![\s.,;:])[\s.,;:]+$/g, ''],
];

export function normalizeAnswer(input: string): string {
  let s = input;
  for (const [re, to] of RULES) {
    if (to === '$1$2:THOUSANDS') s = s.replace(re, (_m, a: string, b: string) => a + b.replace(/,/g, ''));
    else if (typeof to === 'function') s = s.replace(re, to);
    else s = s.replace(re, to);
  }
  return s;
}

/**
 * The canonical string used for exact comparison: normalised, `\text{}` and spacing unwrapped,
 * whitespace removed. Two answers with the same canonical string are equal without parsing.
 */
export function canonicalString(input: string): string {
  return canonicalOfNormal(normalizeAnswer(input));
}

/** canonicalString of a text already normalised by normalizeAnswer. */
export function canonicalOfNormal(normal: string): string {
  return normal
    .replace(
      /\\(?:text|textbf|textit|textrm|textnormal|mbox|mathrm|mathbf|operatorname|boxed)\s*\{([^{}]*)\}/g,
      '$1',
    )
    .replace(/\\(?:left|right)(?![A-Za-z])/g, '')
    .replace(/\\[,;:!]|\\quad|\\qquad|~/g, '')
    .replace(/\s+/g, '')
    .replace(/^\((.)\)$/, '$1')
    .toLowerCase();
}
