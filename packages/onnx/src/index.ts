export { OnnxError, OnnxErrorCode } from './errors.js';
export {
  type DecoderConfig,
  type DecoderShape,
  type DecoderWeights,
  decoderShape,
  exportDecoderToOnnx,
} from './export-decoder.js';
export { createOnnxAdapter, type OnnxAdapterOptions } from './onnx-adapter.js';
