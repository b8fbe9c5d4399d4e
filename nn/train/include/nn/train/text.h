// Text for character-level language models, all of it (each part has its own header): a tokenizer over
// Unicode code points (char_tokenizer.h), a checked text-file reader (text_file.h), token ids as narrow
// as the vocabulary allows (token_ids.h) and random (B, T) training batches with next-character targets
// (text_data.h).
//
//     const std::string text = nn::read_text_file("tinyshakespeare.txt");
//     const auto tok = nn::CharTokenizer::from_text(text);        // 65 distinct characters
//     const nn::TextData data(tok.encode_ids(text));                // first 90% train, last 10% validation
//     autograd::Generator gen(1337);
//     const nn::Batch batch = data.batch(nn::Split::train, 32, 8, gen);  // inputs, targets: (32, 8)
#pragma once

#include <nn/tokenizers/char_tokenizer.h>
#include <nn/train/text_data.h>
#include <nn/tokenizers/text_file.h>
#include <nn/tokenizers/token_ids.h>
