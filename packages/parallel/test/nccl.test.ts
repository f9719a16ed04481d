import { loadNative } from '@agentrl/native';
import { describe, expect, it } from 'vitest';
import { createNcclCommunicator, DistErrorCode, LocalCommunicator, probeNccl } from '../src/index.js';

const raw = loadNative().nccl as Record<string, (...a: unknown[]) => unknown>;

describe('NCCL / RCCL (dlopen)', () => {
  const probe = probeNccl();

  it.skipIf(probe.available)(
    'reports "not available" with the reason where there is no NCCL/RCCL or GPU',
    () => {
      expect(probe.detail).toMatch(/^not available: /);
      expect(probe.detail).toMatch(/libnccl\.so\.2|no usable GPU|runtime/);
      expect(() => createNcclCommunicator(new LocalCommunicator())).toThrow(
        expect.objectContaining({
          code: DistErrorCode.UNAVAILABLE,
          message: expect.stringMatching(/NCCL\/RCCL is not available/),
        }),
      );
      expect(() => raw.uniqueId?.()).toThrow(expect.objectContaining({ code: 'DIST_UNAVAILABLE' }));
    },
  );

  it('checks its arguments natively before touching the library', () => {
    const bad = (f: () => unknown, re: RegExp) =>
      expect(f).toThrow(
        expect.objectContaining({ code: 'DIST_INVALID_ARGUMENT', message: expect.stringMatching(re) }),
      );
    bad(() => raw.initRank?.(new Uint8Array(127), 1, 0, 0), /uniqueId has 127 elements, expected 128/);
    bad(() => raw.initRank?.(new Float32Array(128), 1, 0, 0), /uniqueId has the wrong dtype/);
    bad(() => raw.initRank?.(new Uint8Array(128), 2, 2, 0), /rank must be an integer in \[0, 1\]/);
    bad(() => raw.initRank?.(new Uint8Array(128), 0, 0, 0), /nranks must be an integer in \[1, /);
    bad(() => raw.initRank?.(new Uint8Array(128), 1, 0, -1), /device must be an integer in \[0, 1023\]/);
    bad(() => raw.allreduceSum?.({}, new Float32Array(1)), /expected an NCCL communicator handle/);
    bad(() => raw.broadcast?.(1, new Uint8Array(1), 0), /expected an NCCL communicator handle/);
    bad(() => raw.destroy?.(undefined), /expected an NCCL communicator handle/);
  });
});
