// ONNX Runtime (npm's onnxruntime-node, CPU) on an ONNX model: run it on a .npy batch, or time it as `kiln bench`
// does (a warmup, then runs for a duration; median and fastest run of one batch each).
//
//   NODE_PATH=DIR/node_modules node tools/peers/ort_run.js run MODEL.onnx X.npy Y.npy [--threads T]
//   NODE_PATH=DIR/node_modules node tools/peers/ort_run.js amax PROBE.onnx X.npy AMAX.json  # see qdq_model.py
//   NODE_PATH=DIR/node_modules node tools/peers/ort_run.js bench MODEL.onnx --batch B --threads T \
//       --warmup SECONDS --duration SECONDS --json OUT.json
//
// X.npy: float32 [N, 3, H, W] (`kiln preprocess` writes it); Y.npy: float32 [N, classes].
const fs = require('fs');

function fail(message) {
  console.error(`ort_run.js: ${message}`);
  process.exit(2);
}

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  fail('onnxruntime-node not found; `npm install --ignore-scripts onnxruntime-node` in a folder and set NODE_PATH to its node_modules');
}

function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') fail(`${path}: not a .npy file`);
  const start = (buf[6] === 1 ? 10 : 12);
  const length = buf[6] === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const header = buf.toString('latin1', start, start + length);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True")) fail(`${path}: expected C-order float32`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter(s => s.trim()).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + start + length, buf.byteOffset + buf.length));
  return { shape, data };
}

function writeNpy(path, shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')},), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0; head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(path, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function options(args, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < args.length; i += 2) {
    const key = args[i].replace(/^--/, '');
    if (!(key in defaults) || i + 1 >= args.length) fail(`unknown or incomplete option ${args[i]}`);
    out[key] = args[i + 1];
  }
  return out;
}

async function session(model, threads) {
  // Two threads in one op, none across ops: the configuration kiln's --threads runs.
  return ort.InferenceSession.create(model, { intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential' });
}

// Runs the images one at a time, as a batch-1 plan does.
async function run(model, xPath, yPath, rest) {
  const opt = options(rest, { threads: '2' });
  const s = await session(model, opt.threads);
  const x = readNpy(xPath);
  const per = x.shape.slice(1).reduce((a, b) => a * b, 1);
  const outputs = [];
  for (let n = 0; n < x.shape[0]; n++) {
    const input = new ort.Tensor('float32', x.data.slice(n * per, (n + 1) * per), [1, ...x.shape.slice(1)]);
    const y = (await s.run({ [s.inputNames[0]]: input }))[s.outputNames[0]];
    outputs.push(y.data);
  }
  const classes = outputs[0].length;
  const all = new Float32Array(classes * outputs.length);
  outputs.forEach((o, n) => all.set(o, n * classes));
  writeNpy(yPath, [outputs.length, classes], all);
}

// The max of |x| of every output but the first (qdq_model.py's probe outputs), over the images one at a time.
async function amax(model, xPath, outPath, rest) {
  const opt = options(rest, { threads: '2' });
  const s = await session(model, opt.threads);
  const x = readNpy(xPath);
  const per = x.shape.slice(1).reduce((a, b) => a * b, 1);
  const result = {};
  for (let n = 0; n < x.shape[0]; n++) {
    const input = new ort.Tensor('float32', x.data.slice(n * per, (n + 1) * per), [1, ...x.shape.slice(1)]);
    const outputs = await s.run({ [s.inputNames[0]]: input });
    for (const name of s.outputNames.slice(1)) {
      const layer = name.replace(/^amax:/, '');
      for (const v of outputs[name].data) result[layer] = Math.max(result[layer] || 0, Math.abs(v));
    }
  }
  fs.writeFileSync(outPath, JSON.stringify(result, null, 1));
}

async function bench(model, rest) {
  const opt = options(rest, { batch: '1', threads: '2', warmup: '0.5', duration: '3', json: '' });
  const s = await session(model, opt.threads);
  const batch = Number(opt.batch);
  const data = Float32Array.from({ length: batch * 3 * 224 * 224 }, (_, i) => Math.sin(i) * 2);
  const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', data, [batch, 3, 224, 224]) };
  const until = (seconds) => Number(process.hrtime.bigint()) / 1e9 + Number(seconds);
  for (const end = until(opt.warmup); Number(process.hrtime.bigint()) / 1e9 < end;) await s.run(feeds);
  const times = [];
  for (const end = until(opt.duration); Number(process.hrtime.bigint()) / 1e9 < end || times.length < 3;) {
    const t = process.hrtime.bigint();
    await s.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  const result = { runtime: `onnxruntime-node ${require('onnxruntime-node/package.json').version}`, batch,
    threads: Number(opt.threads), runs: times.length,
    latency: { median_ms: times[Math.floor(times.length / 2)], min_ms: times[0] } };
  if (opt.json) fs.writeFileSync(opt.json, JSON.stringify(result));
  console.log(`${model}: batch ${batch}, ${opt.threads} threads, median ${result.latency.median_ms.toFixed(2)} ms over ${times.length} runs`);
}

const [mode, model, ...rest] = process.argv.slice(2);
if (mode === 'run' && rest.length >= 2) run(model, rest[0], rest[1], rest.slice(2)).catch(e => fail(e.message));
else if (mode === 'amax' && rest.length >= 2) amax(model, rest[0], rest[1], rest.slice(2)).catch(e => fail(e.message));
else if (mode === 'bench' && model) bench(model, rest).catch(e => fail(e.message));
else fail('usage: ort_run.js run|amax MODEL X.npy OUT [--threads T] | bench MODEL [--batch B] [--threads T] [--warmup S] [--duration S] [--json OUT]');
