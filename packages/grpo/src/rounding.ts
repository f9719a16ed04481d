/**
 * round-half-to-even(a * b / c) for non-negative integers, computed exactly in integers so that a
 * tie is a tie (Python's `round` on the float quotient agrees whenever the float is exact).
 * The reference's quotas use Python's `round`, which rounds half to even.
 */
export function roundHalfEvenRatio(a: number, b: number, c: number): number {
  const num = a * b;
  const q = Math.floor(num / c);
  const twiceRemainder = 2 * (num - q * c);
  if (twiceRemainder > c) return q + 1;
  if (twiceRemainder < c) return q;
  return q % 2 === 0 ? q : q + 1;
}
