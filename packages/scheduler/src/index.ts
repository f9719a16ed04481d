export type { ScheduledEngine, Scheduler, SchedulerLease, SchedulerSnapshot } from '@agentrl/rollout';
export { type CapacityWatcher, watchEngineCapacity } from './capacity-watcher.js';
export { createEngineScheduler, type EngineSchedulerOptions } from './engine-scheduler.js';
export { SchedulerError, SchedulerErrorCode } from './errors.js';
export { createKvAwareScheduler, type KvAwareSchedulerOptions } from './kv-aware-scheduler.js';
export { createSimClock, type SimClock } from './simulator/sim-clock.js';
export { createSimEngine, type SimEngine, type SimEngineConfig } from './simulator/sim-engine.js';
export { type SimulationConfig, type SimulationResult, simulateStep } from './simulator/simulate.js';
export {
  DEFAULT_WORKLOAD,
  generateWorkload,
  type TrajectorySpec,
  type WorkloadConfig,
} from './simulator/workload.js';
export { createStaticScheduler } from './static-scheduler.js';
