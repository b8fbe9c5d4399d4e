#!/usr/bin/env node
// gpt-3-encoder's encode timed on a text (bench/bench_bpe.cpp runs it):
//   node bpe_gpt3_encoder.js PACKAGE_DIR TEXT [whole]
// prints "TOKENS COLD WARM [WHOLE]": the token count; the seconds of a first encode (its cache empty)
// and the median of 3 more (its cache full), fed in pieces split where a non-space character meets
// whitespace, as the exactness test feeds it; with "whole", the seconds of one encode of the whole text
// in a fresh process state (its cache emptied), which grows with the square of the length.
'use strict';
const fs = require('fs');
const path = require('path');
const [packageDir, input, whole] = process.argv.slice(2);
const encoderFile = path.resolve(packageDir, 'Encoder.js');
let { encode } = require(encoderFile);
const text = fs.readFileSync(input, 'utf-8');
const pieces = text.split(/(?<=\S)(?=\s)/u);
function seconds(f) {
  const t0 = process.hrtime.bigint();
  const result = f();
  return [result, Number(process.hrtime.bigint() - t0) / 1e9];
}
const [count, cold] = seconds(() => pieces.reduce((n, piece) => n + encode(piece).length, 0));
const warm = [0, 1, 2].map(() => seconds(() => pieces.forEach(piece => encode(piece)))[1]).sort((a, b) => a - b)[1];
const out = [count, cold, warm];
if (whole === 'whole') {
  delete require.cache[encoderFile];  // a fresh module: an empty cache
  ({ encode } = require(encoderFile));
  const [ids, s] = seconds(() => encode(text));
  if (ids.length !== count) { console.error(`whole: ${ids.length} tokens, pieces: ${count}`); process.exit(1); }
  out.push(s);
}
console.log(out.join(' '));
