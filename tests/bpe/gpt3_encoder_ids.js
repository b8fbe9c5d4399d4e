#!/usr/bin/env node
// The oracle of the BPE exactness tests: the ids that the npm package gpt-3-encoder gives a text, made
// when the test runs (never copied from tinygpt's output).
//
//   node gpt3_encoder_ids.js PACKAGE_DIR INPUT OUTPUT
//
// writes OUTPUT as two lines of space-separated ids: first gpt-3-encoder exactly as published, then the
// same code with its pattern's \s and \S spelled \p{White_Space} and \P{White_Space}: the whitespace of
// OpenAI's Python encoder and of tiktoken, which tinygpt follows. The two differ only where the text
// holds U+FEFF (JavaScript's \s counts it, Unicode's White_Space does not) or U+0085 (the other way).
//
// gpt-3-encoder is quadratic in the length of a string it is given, so it is given pieces split where a
// non-space character is followed by whitespace: no GPT-2 pre-token crosses such a point.
'use strict';
const fs = require('fs');
const path = require('path');
const Module = require('module');

const [packageDir, input, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: gpt3_encoder_ids.js PACKAGE_DIR INPUT OUTPUT');
  process.exit(2);
}
const encoderFile = path.join(packageDir, 'Encoder.js');
const source = fs.readFileSync(encoderFile, 'utf-8');

function load(code) {
  const m = new Module(encoderFile, module);
  m.filename = encoderFile;
  m.paths = Module._nodeModulePaths(packageDir);
  m._compile(code, encoderFile);
  return m.exports;
}

const published = load(source);
const patternLine = source.split('\n').find(line => line.startsWith('const pat = '));
if (!patternLine || !patternLine.includes('\\s+(?!\\S)')) {
  console.error(`${encoderFile}: the pattern line is not the one this script knows`);
  process.exit(1);
}
const unicodeLine = patternLine.replace(/\\s/g, '\\p{White_Space}').replace(/\\S/g, '\\P{White_Space}');
const unicode = load(source.replace(patternLine, unicodeLine));

const text = fs.readFileSync(input, 'utf-8');
function ids(encoder, split) {
  const out = [];
  for (const piece of text.split(split)) if (piece.length) for (const id of encoder.encode(piece)) out.push(id);
  return out;
}
const publishedIds = ids(published, /(?<=\S)(?=\s)/u);
const unicodeIds = ids(unicode, /(?<=\P{White_Space})(?=\p{White_Space})/u);
for (const id of publishedIds.concat(unicodeIds))
  if (!Number.isInteger(id)) { console.error('gpt-3-encoder gave a non-integer id'); process.exit(1); }
fs.writeFileSync(output, publishedIds.join(' ') + '\n' + unicodeIds.join(' ') + '\n');
