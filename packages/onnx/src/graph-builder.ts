// onnx-proto is CommonJS whose named exports Node's ESM loader cannot detect: import the default.
import onnxProto, { type onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;

type Dim = number | string;

/**
 * A small helper over onnx-proto's generated protobufjs classes: add nodes, constants and
 * initializers by name and get back the output names, so the model graph reads like the math.
 */
export class GraphBuilder {
  private readonly nodes: OnnxTypes.INodeProto[] = [];
  private readonly initializers: OnnxTypes.ITensorProto[] = [];
  private readonly inputs: OnnxTypes.IValueInfoProto[] = [];
  private readonly outputs: OnnxTypes.IValueInfoProto[] = [];
  private counter = 0;

  /** A fresh tensor name with a readable prefix. */
  name(prefix: string): string {
    return `${prefix}_${this.counter++}`;
  }

  input(name: string, elemType: OnnxTypes.TensorProto.DataType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  output(name: string, elemType: OnnxTypes.TensorProto.DataType, dims: Dim[]): void {
    this.outputs.push(valueInfo(name, elemType, dims));
  }

  /** One node; returns its output names (one per `outputs` count, or the given names). */
  op(
    opType: string,
    inputs: string[],
    attrs: Record<string, number | number[] | string> = {},
    outputs: string[] | number = 1,
  ): string[] {
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, () => this.name(opType.toLowerCase()))
        : outputs;
    this.nodes.push({
      opType,
      input: inputs,
      output: outs,
      name: this.name(`n_${opType}`),
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return outs;
  }

  /** Single-output node. */
  op1(
    opType: string,
    inputs: string[],
    attrs: Record<string, number | number[] | string> = {},
    output?: string,
  ): string {
    return this.op(opType, inputs, attrs, output ? [output] : 1)[0]!;
  }

  /** A float32 initializer (weights). */
  floats(name: string, dims: number[], data: Float32Array): string {
    this.initializers.push({
      name,
      dims,
      dataType: onnx.TensorProto.DataType.FLOAT,
      rawData: new Uint8Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)),
    });
    return name;
  }

  /** An int64 initializer (shapes, axes, indices). */
  ints(values: number[], dims: number[] = [values.length]): string {
    const name = this.name('const_i64');
    const raw = new BigInt64Array(values.map((v) => BigInt(v)));
    this.initializers.push({
      name,
      dims,
      dataType: onnx.TensorProto.DataType.INT64,
      rawData: new Uint8Array(raw.buffer),
    });
    return name;
  }

  /** A float32 scalar constant. */
  scalar(value: number): string {
    return this.floats(this.name('const_f32'), [], Float32Array.of(value));
  }

  /** Serialises the model (IR 8, opset 15: what onnx-proto's schema and ONNX Runtime agree on). */
  build(graphName: string): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName: 'agentrl',
      producerVersion: '0.1.0',
      opsetImport: [{ domain: '', version: 15 }],
      graph: {
        name: graphName,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function valueInfo(
  name: string,
  elemType: OnnxTypes.TensorProto.DataType,
  dims: Dim[],
): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

function attribute(name: string, v: number | number[] | string): OnnxTypes.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof v === 'string') return { name, type: T.STRING, s: new TextEncoder().encode(v) };
  if (Array.isArray(v)) return { name, type: T.INTS, ints: v };
  if (Number.isInteger(v)) return { name, type: T.INT, i: v };
  return { name, type: T.FLOAT, f: v };
}
