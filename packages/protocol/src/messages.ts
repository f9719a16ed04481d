import { z } from 'zod';

/** Chat roles. `tool` exists for templates that have one; the rStar2-Agent format sends tool results as `user`. */
export const RoleSchema = z
  .enum(['system', 'user', 'assistant', 'tool'])
  .describe('who speaks a chat message');
export type Role = z.infer<typeof RoleSchema>;

export const ChatMessageSchema = z
  .object({
    role: RoleSchema,
    content: z
      .string()
      .describe('the message text as the model sees it, tool-call and tool-response tags included'),
  })
  .describe('one chat message');
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const ChatSchema = z.array(ChatMessageSchema).min(1).describe('a chat prompt: one or more messages');
export type Chat = z.infer<typeof ChatSchema>;
