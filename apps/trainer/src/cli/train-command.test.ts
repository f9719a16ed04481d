import { probeNccl } from '@agentrl/parallel';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { assertRanksSupported } from './train-command.js';

describe('assertRanksSupported (GPU ranks need NCCL/RCCL)', () => {
  const cuda = parseConfig({ device: 'cuda' }, 'test');
  const cpu = parseConfig({}, 'test');

  it('lets CPU ranks and a single GPU process through', () => {
    expect(() => assertRanksSupported(cpu, 4)).not.toThrow();
    expect(() => assertRanksSupported(cuda, 1)).not.toThrow();
  });

  it.skipIf(probeNccl().available)(
    'stops GPU ranks without NCCL, naming the library, why and the way out',
    () => {
      expect(() => assertRanksSupported(cuda, 2)).toThrow(
        /--device cuda with 2 ranks all-reduces gradients with NCCL, which is not available: .*AGENTRL_NCCL_LIBRARY.*--device cpu/,
      );
      const rocm = parseConfig({ device: 'rocm' }, 'test');
      expect(() => assertRanksSupported(rocm, 8)).toThrow(/with RCCL/);
    },
  );
});
