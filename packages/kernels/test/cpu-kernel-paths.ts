export { describeEachCpuKernelPath, notExercised } from '@agentrl/native/testing';
