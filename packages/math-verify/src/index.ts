export { type AnswerFormat, answerFormat, isListAnswer } from './answer-format.js';
export { CAS_MAX_CHARS, warmCas } from './cas.js';
export { DEFAULT_VERIFY_OPTIONS, type VerifyOptions, VerifyOptionsSchema } from './config.js';
export { MathVerifyError, MathVerifyErrorCode } from './errors.js';
export { type IsolatedOptions, verifyBatchIsolated } from './isolated.js';
export { LIMITS } from './limits.js';
export { extractAnswer, type VerifyReason, type VerifyResult, verify, verifyBatch } from './verify.js';
