#!/usr/bin/env node
// The oracle of the tokenizer.json tests: the ids that @lenml/tokenizers (transformers.js's tokenizers, no
// dependencies; npm) gives a text for a tokenizer.json, made when the test runs (never copied from
// tinygpt's output).
//
//   node tokenizers_js_ids.js NPM_DIR TOKENIZER_JSON INPUT OUTPUT
//
// writes OUTPUT as the space-separated ids of INPUT's whole text, without special tokens added (tinygpt's
// encode adds no BOS), and OUTPUT.text as those ids decoded (special tokens kept).
'use strict';
const fs = require('fs');
const path = require('path');

const [npmDir, tokenizerJson, input, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: tokenizers_js_ids.js NPM_DIR TOKENIZER_JSON INPUT OUTPUT');
  process.exit(2);
}
const { TokenizerLoader } = require(path.join(npmDir, 'node_modules', '@lenml', 'tokenizers'));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(tokenizerJson, 'utf-8')),
  tokenizerConfig: {},
});
const ids = tokenizer.encode(fs.readFileSync(input, 'utf-8'), { add_special_tokens: false });
fs.writeFileSync(output, ids.join(' ') + '\n');
fs.writeFileSync(output + '.text', tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));
