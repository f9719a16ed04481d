import { parseArgs } from 'node:util';
import { describe, expect, it } from 'vitest';
import { EXECUTOR_FLAGS, executorFlagsOf, executorParseOptions, executorUsage } from './cli-flags.js';

describe('the executor CLI flag table', () => {
  it('parses every declared flag, repeatable ones in order, and rejects an unknown one', () => {
    const { values } = parseArgs({
      args: ['serve', '--read-only', '/a:/b', '--port=8091', '--read-only', '/c', '-h'],
      allowPositionals: true,
      options: executorParseOptions(),
    });
    expect(values).toEqual({ 'read-only': ['/a:/b', '/c'], port: '8091', help: true });
    expect(() =>
      parseArgs({ args: ['serve', '--bogus', '1'], allowPositionals: true, options: executorParseOptions() }),
    ).toThrow(/Unknown option '--bogus'/);
  });

  it('the usage text lists each flag under the subcommands that read it', () => {
    const usage = executorUsage();
    const [serve, worker] = usage.split('agentrl-executor worker');
    for (const f of EXECUTOR_FLAGS) {
      expect(serve!.includes(`--${f.name} <`)).toBe(f.commands.includes('serve'));
      expect(worker!.includes(`--${f.name} <`)).toBe(f.commands.includes('worker'));
    }
    expect(executorFlagsOf('worker').map((f) => f.name)).not.toContain('port');
  });
});
