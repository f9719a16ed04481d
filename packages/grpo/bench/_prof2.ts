import { createSyntheticGroups, resampleOnCorrect } from '../src/index.js';

const groups = createSyntheticGroups({ prompts: 128, groupSize: 32, tokens: 2048, seed: 1 });
for (let i = 0; i < 10; i++) resampleOnCorrect(groups, { seed: 1 });
console.log('--- measure');
const xs: number[] = [];
for (let i = 0; i < 15; i++) {
  const t = performance.now();
  resampleOnCorrect(groups, { seed: 1 });
  xs.push(performance.now() - t);
  console.log('run', xs[i]!.toFixed(1));
}
