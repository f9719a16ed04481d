/** Linear warm-up to `peak`, then constant or cosine decay to 10% of peak at `total` (1-based steps). */
export function learningRate(
  step: number,
  s: { peak: number; warmup: number; total: number; decay: 'constant' | 'cosine' },
): number {
  if (s.warmup > 0 && step <= s.warmup) return (s.peak * step) / s.warmup;
  if (s.decay === 'constant' || s.total <= s.warmup) return s.peak;
  const progress = Math.min(1, (step - s.warmup) / (s.total - s.warmup));
  return s.peak * (0.1 + 0.45 * (1 + Math.cos(Math.PI * progress)));
}
