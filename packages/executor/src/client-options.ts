import { z } from 'zod';

/** Knobs shared by the remote clients (HTTP and Redis). */
export const RemoteClientSchema = z.object({
  batchSize: z.number().int().min(1).max(10_000).default(64).describe('calls sent together at most'),
  lingerMs: z
    .number()
    .min(0)
    .max(10_000)
    .default(2)
    .describe('how long a call waits for others to fill its batch before it is sent anyway'),
  maxInFlight: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(4096)
    .describe('calls sent and not yet answered at most; more wait in the client (back-pressure)'),
  retries: z
    .number()
    .int()
    .min(0)
    .max(100_000)
    .optional()
    .describe(
      'HTTP: resends of a call at most (lost in transport, or refused by an overloaded server); default: as many as fit before its deadline',
    ),
  retryBackoffMs: z.number().min(0).max(60_000).default(100).describe('first retry delay, doubled each time'),
  retryMaxBackoffMs: z
    .number()
    .min(0)
    .max(60_000)
    .default(2_000)
    .describe('cap on the retry delay, so a server back after an outage is found within this long'),
  timeoutMs: z.number().int().min(10).max(600_000).optional().describe('default per-call wall-clock limit'),
  memoryMb: z.number().int().min(16).max(65_536).optional().describe('default per-call memory limit'),
  answerSlackMs: z
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(60_000)
    .describe(
      'how long past its time limit a call may stay unanswered before it fails with a DEADLINE error',
    ),
});
export type RemoteClientOptions = z.infer<typeof RemoteClientSchema>;
