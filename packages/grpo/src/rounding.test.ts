import { describe, expect, it } from 'vitest';
import { roundHalfEvenRatio } from './rounding.js';

describe('roundHalfEvenRatio', () => {
  it.each([
    // a, b, c, expected: round-half-to-even(a * b / c), like Python's round
    [3, 16, 32, 2], // 1.5 -> 2
    [5, 16, 32, 2], // 2.5 -> 2
    [7, 16, 32, 4], // 3.5 -> 4
    [1, 16, 32, 0], // 0.5 -> 0
    [29, 16, 32, 14], // 14.5 -> 14
    [1, 3, 6, 0], // 0.5 -> 0
    [5, 3, 6, 2], // 2.5 -> 2
    [10, 16, 32, 5],
    [2, 16, 30, 1], // 1.067 -> 1
    [7, 16, 30, 4], // 3.733 -> 4
    [0, 16, 32, 0],
    [32, 16, 32, 16],
  ])('round(%i * %i / %i) = %i', (a, b, c, want) => {
    expect(roundHalfEvenRatio(a, b, c)).toBe(want);
  });
});
