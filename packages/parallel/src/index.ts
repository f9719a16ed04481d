export {
  allgatherJson,
  broadcastJson,
  type Communicator,
  type CreateCommunicatorOptions,
  createCommunicator,
  LocalCommunicator,
  launchedWorldSize,
  MpiCommunicator,
  type MpiProbe,
  type PendingReduce,
  probeMpi,
  scatterJson,
  THREAD_LEVELS,
  type ThreadLevel,
} from './communicator.js';
export {
  type DeviceBucket,
  DeviceGradientAllReduce,
  type DeviceGradientSource,
  isDeviceGradientSource,
  planDeviceBuckets,
} from './device-gradients.js';
export { DistError, DistErrorCode } from './errors.js';
export {
  DEFAULT_BUCKET_BYTES,
  GradientAllReduce,
  type GradientReduceOptions,
  type GradientSource,
  globalSum,
  type MicroBatchRunOptions,
  runMicroBatches,
  shardIndices,
  shardRange,
} from './gradients.js';
export { type MpirunOptions, type MpirunResult, mpirunMissing, runMpirun } from './launch.js';
export {
  createNcclCommunicator,
  NCCL_UNIQUE_ID_BYTES,
  NcclCommunicator,
  type NcclProbe,
  probeNccl,
} from './nccl.js';
