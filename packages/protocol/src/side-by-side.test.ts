import { describe, expect, it } from 'vitest';
import { alternating, median, parseVariants } from './side-by-side.js';

describe('parseVariants', () => {
  it('reads name=dir items and skips empty ones', () => {
    expect(parseVariants('pre23=/a/packages/x, head=/b/packages/x,')).toEqual([
      { name: 'pre23', dir: '/a/packages/x' },
      { name: 'head', dir: '/b/packages/x' },
    ]);
    expect(parseVariants(undefined)).toEqual([]);
    expect(parseVariants('')).toEqual([]);
  });

  it('names what is wrong: a missing =, a reserved or repeated name, a missing directory', () => {
    expect(() => parseVariants('/a/packages/x')).toThrow(/'\/a\/packages\/x' is not name=<package dir>/);
    expect(() => parseVariants('pre23=')).toThrow(/not name=<package dir>/);
    expect(() => parseVariants('this=/a', { envName: 'X' })).toThrow(/X: the name 'this' is reserved/);
    expect(() => parseVariants('a=/x,a=/y')).toThrow(/'a' is given twice/);
    expect(() => parseVariants('a=/nowhere', { exists: () => false })).toThrow(
      /a=\/nowhere: no such package directory/,
    );
  });
});

describe('alternating and median', () => {
  it('reverses the order on odd rounds only', () => {
    expect(alternating(['a', 'b', 'c'], 0)).toEqual(['a', 'b', 'c']);
    expect(alternating(['a', 'b', 'c'], 1)).toEqual(['c', 'b', 'a']);
    expect(alternating(['a', 'b', 'c'], 2)).toEqual(['a', 'b', 'c']);
  });

  it('takes the middle value without reordering its input', () => {
    const xs = [5, 1, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 3]);
    expect(median([4, 1, 3, 2])).toBe(3);
    expect(median([])).toBeNaN();
  });
});
