// Runs an ONNX model in onnxruntime (CPU) on one batch of .npy data and
// prints its outputs as JSON: {"name": [values...], ...}.
//
//   node run_onnx.js MODEL DATA_DIR FIRST_SAMPLE BATCH
//
// DATA_DIR holds <input>.npy per graph input (samples along dim 0); the
// batch is samples FIRST_SAMPLE .. FIRST_SAMPLE + BATCH - 1.

'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

/// Reads a little-endian C-order .npy of float32 or int64.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY')
    throw new Error(`${file} is not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr': *'([^']+)'/.exec(header)[1];
  const shape = /'shape': *\(([^)]*)\)/.exec(header)[1]
      .split(',').map(s => s.trim()).filter(s => s).map(Number);
  const data = buf.subarray(start + headerLen);
  const bytes = new Uint8Array(data).buffer;
  if (descr === '<f4') return {type: 'float32', shape, values: new Float32Array(bytes)};
  if (descr === '<i8') return {type: 'int64', shape, values: new BigInt64Array(bytes)};
  throw new Error(`${file}: unsupported dtype ${descr}`);
}

async function main() {
  const [model, dataDir, first, batch] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const feeds = {};
  for (const name of session.inputNames) {
    const array = readNpy(path.join(dataDir, `${name}.npy`));
    const sample = array.shape.slice(1).reduce((a, b) => a * b, 1);
    const begin = Number(first) * sample;
    const values = array.values.slice(begin, begin + Number(batch) * sample);
    feeds[name] = new ort.Tensor(array.type, values, [Number(batch), ...array.shape.slice(1)]);
  }
  const results = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames)
    out[name] = Array.from(results[name].data, Number);
  console.log(JSON.stringify(out));
}

main().catch(e => { console.error(`error: ${e.message}`); process.exit(1); });
