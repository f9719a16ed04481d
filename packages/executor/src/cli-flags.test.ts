import { parseArgs } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
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

describe('the executor CLI on a bad flag', () => {
  it('names the flag, prints the usage and exits 2 (a usage error), without starting anything', async () => {
    const { main } = await import('./bin.js');
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => {
      errors.push(a.join(' '));
    });
    const before = process.exitCode;
    try {
      await main(['serve', '--bogus', '1']);
      expect(process.exitCode).toBe(2);
      expect(errors.join('\n')).toMatch(/agentrl-executor: Unknown option '--bogus'/);
      expect(errors.join('\n')).toMatch(/agentrl-executor serve/);
    } finally {
      spy.mockRestore();
      process.exitCode = before;
    }
  });
});
