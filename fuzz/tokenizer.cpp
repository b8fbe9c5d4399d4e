// Fuzz target: the character tokenizer and the text reader on arbitrary bytes (invalid UTF-8 included).
// Promises checked: from_text and from_vocabulary_utf8 accept valid UTF-8 and refuse the rest with
// std::invalid_argument; decode(encode(s)) == s; the vocabulary round-trips; read_text_file returns the
// bytes or a std::runtime_error.
#include <stdexcept>
#include <string>

#include <nn/train/text.h>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text = fuzz::bytes(data, size);
    try {
        const nn::CharTokenizer tok = nn::CharTokenizer::from_text(text);
        const std::vector<int64_t> ids = tok.encode(text);
        if (tok.decode(ids) != text) fuzz::fail("decode(encode(text)) != text");
        const nn::CharTokenizer again = nn::CharTokenizer::from_vocabulary_utf8(tok.vocabulary_utf8());
        if (again.vocabulary() != tok.vocabulary()) fuzz::fail("the vocabulary does not round-trip");
        if (!ids.empty()) {
            const nn::TextData split(ids);
            (void)split.size(nn::Split::train);
        }
    } catch (const std::invalid_argument&) {}
    // The same bytes as a vocabulary string and as text for a fixed vocabulary.
    try {
        (void)nn::CharTokenizer::from_vocabulary_utf8(text);
    } catch (const std::invalid_argument&) {}
    const nn::CharTokenizer ascii = nn::CharTokenizer::from_text("abc \n");
    try {
        const std::vector<int64_t> kept = ascii.encode(text, nn::Unknown::skip);
        for (const int64_t id : kept)
            if (id < 0 || id >= ascii.vocab_size()) fuzz::fail("encode returned an id outside the vocabulary");
        (void)ascii.decode(kept);
        (void)ascii.encode(text);
    } catch (const std::invalid_argument&) {}
    try {
        const std::string read = nn::read_text_file(fuzz::scratch_file(text, ".txt"));
        if (read != text) fuzz::fail("read_text_file returned other bytes than the file's");
    } catch (const std::runtime_error&) {}
    return 0;
}
