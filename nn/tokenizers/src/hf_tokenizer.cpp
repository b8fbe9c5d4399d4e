// Hugging Face's tokenizer.json: the parts the two kinds of BPE use (hf_tokenizer.h), everything else
// refused by name. Reading checks every field before anything is built from it; encoding splits out the
// added tokens, pre-tokenizes (regular expressions by PCRE2, or SentencePiece's "▁"), and merges each piece
// by rank through a heap, as the `tokenizers` library's Word::merge_all does.
#include "nn/tokenizers/hf_tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/file_names.h>
#include <nn/files/json_file.h>

#include "bpe_tables.h"  // GPT-2's pattern and stand-in bytes
#include "utf8.h"

namespace nn {

using json = nlohmann::json;

namespace {

constexpr std::string_view kKind = "hf-tokenizer-json";
constexpr const char* kBosKey = "tokenizer.hf.bos_token_id";  // config.json's ids (HfTokenizer::ModelIds)
constexpr const char* kEosKey = "tokenizer.hf.eos_token_id";
constexpr uint64_t kMaxFileBytes = 64 << 20;  // Llama 3's tokenizer.json is 9 MB, Qwen2.5's 7 MB
constexpr int kMaxDepth = 32;
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁" (U+2581), SentencePiece's space
uint64_t pair_key(int32_t a, int32_t b) { return uint64_t{static_cast<uint32_t>(a)} << 32 | static_cast<uint32_t>(b); }

struct Regex {
    std::shared_ptr<pcre2_code> code;
    std::string pattern;
};

}  // namespace

struct HfTokenizer::Tables {
    std::string file;  // the tokenizer.json
    std::string source;
    Kind kind = Kind::byte_level;
    std::vector<std::string> spelled;  // by id
    std::unordered_map<std::string, int32_t> id_of;
    std::vector<bool> added, special;
    std::vector<std::pair<std::string, int32_t>> added_tokens;         // content, id
    std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (left, right) -> (rank, result)
    std::vector<Regex> splits;  // byte-level: each splits every piece in turn ("Isolated")
    std::array<int32_t, 256>
        byte_token{};  // byte-level: the token of each byte's stand-in; SentencePiece: <0xNN> or -1
    std::array<char32_t, 256> stand_in{};
    std::unordered_map<char32_t, unsigned char> byte_of;  // stand-in -> byte
    int32_t unk = -1;
    bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
    bool prepend = false, prepend_first_only = false;  // SentencePiece: "▁" before a section (or the text's first)
    bool metaspace = false;  // Metaspace's: not before a section that starts with a space (the normalizer's: always)
    bool strip_leading_space = false;  // the decoder's Strip / Metaspace
    bool decode_bytes = false;         // the decoder's ByteFallback: <0xNN> as its byte
    int64_t id_bound = 0;              // the vocab's and the added tokens' count: every id is below it
    std::optional<int64_t> bos;

    [[noreturn]] void refuse(const std::string& what) const {
        throw std::invalid_argument(fmt::format("{}: {}", source, what));
    }
    void read(const json& j);
    void read_model(const json& m);
    void read_normalizer(const json& n);
    void read_pre_tokenizer(const json& p, bool top);
    void read_decoder(const json& d, bool top);
    void read_post_processor(const json& p, bool top);
    void add_split(const std::string& pattern);

    std::vector<std::string_view> split(std::string_view text, const Regex& r) const;
    void encode_section(std::string_view text, bool first, std::vector<int64_t>& out) const;
    void merge(std::vector<int32_t>& symbols) const;
};

namespace {

std::string quote(const json& v) {
    if (v.is_string()) return quoted_text(v.get<std::string>(), 40);
    const std::string d = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return d.size() > 60 ? d.substr(0, 60) + "..." : d;
}

// NN of a byte token "<0xNN>" (two hex digits, as SentencePiece writes them), or -1.
int byte_token_value(std::string_view s) {
    const auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    if (s.size() != 6 || !s.starts_with("<0x") || s[5] != '>' || hex(s[3]) < 0 || hex(s[4]) < 0) return -1;
    return hex(s[3]) * 16 + hex(s[4]);
}

// A part's "type" when it is a string, else "" (which no branch takes: the part is refused, quoted).
std::string type_field(const json& v) {
    return v.is_object() && v.contains("type") && v["type"].is_string() ? v["type"].get<std::string>() : "";
}

std::string type_of(const json& v) { return v.is_object() && v.contains("type") ? quote(v["type"]) : quote(v); }

}  // namespace

void HfTokenizer::Tables::add_split(const std::string& pattern) {
    int error = 0;
    PCRE2_SIZE at = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP, &error, &at, nullptr);
    if (!code) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(error, message.data(), message.size());
        refuse(fmt::format("pre_tokenizer Split's pattern {} does not compile at offset {}: {}",
                           quoted_text(pattern, 60), at, reinterpret_cast<const char*>(message.data())));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // (without the JIT: the interpreter, the same matches)
    splits.push_back({std::shared_ptr<pcre2_code>(code, &pcre2_code_free), pattern});
}

void HfTokenizer::Tables::read_pre_tokenizer(const json& p, bool top) {
    if (p.is_null() && top) return;
    if (!p.is_object() || !p.contains("type")) refuse(fmt::format("pre_tokenizer {} has no \"type\"", quote(p)));
    const std::string type = type_field(p);
    const auto flag = [&](const char* key, bool fallback) {
        if (!p.contains(key) || p[key].is_null()) return fallback;
        if (!p[key].is_boolean()) refuse(fmt::format("pre_tokenizer {}'s \"{}\" is {}", type, key, quote(p[key])));
        return p[key].get<bool>();
    };
    if (type == "Sequence" && top) {
        if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array())
            refuse("pre_tokenizer Sequence has no \"pretokenizers\" list");
        for (const json& each : p["pretokenizers"]) read_pre_tokenizer(each, false);
    } else if (type == "ByteLevel") {
        if (kind == Kind::sentencepiece) refuse("pre_tokenizer ByteLevel beside SentencePiece's \"▁\"");
        if (flag("add_prefix_space", false))
            refuse(
                "pre_tokenizer ByteLevel's \"add_prefix_space\" true is not supported (a space put before the text)");
        if (flag("use_regex", true)) add_split(detail::kGpt2Pattern);  // GPT-2's, as nn::BpeTokenizer's
        kind = Kind::byte_level;
        stand_in = detail::gpt2_byte_to_code_point();
        prepend = false;
        // (ByteLevel maps the bytes: done when merging; it must come last, after every split)
        splits.push_back({nullptr, "ByteLevel"});
    } else if (type == "Split") {
        if (!p.contains("pattern") || !p["pattern"].is_object() || p["pattern"].size() != 1)
            refuse(fmt::format("pre_tokenizer Split's \"pattern\" is {}",
                               p.contains("pattern") ? quote(p["pattern"]) : "missing"));
        if (p.value("behavior", json()) != "Isolated")
            refuse(fmt::format("pre_tokenizer Split's \"behavior\" is {}: only \"Isolated\" is supported",
                               p.contains("behavior") ? quote(p["behavior"]) : "missing"));
        if (flag("invert", false)) refuse("pre_tokenizer Split's \"invert\" true is not supported");
        const json& pattern = p["pattern"];
        if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
            add_split(pattern["Regex"].get<std::string>());
        } else if (pattern.contains("String") && pattern["String"].is_string()) {
            std::string literal = "\\Q" + pattern["String"].get<std::string>() + "\\E";  // PCRE2's quoting
            if (pattern["String"].get<std::string>().find("\\E") != std::string::npos)
                refuse("pre_tokenizer Split's \"String\" holds \\E, which this reader cannot quote");
            add_split(literal);
        } else {
            refuse(fmt::format("pre_tokenizer Split's \"pattern\" is {}", quote(pattern)));
        }
    } else if (type == "Digits") {
        add_split(flag("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
    } else if (type == "Metaspace" && top) {
        if (p.value("replacement", json()) != std::string(kSpaceMark))
            refuse(fmt::format("pre_tokenizer Metaspace's \"replacement\" is {}, not \"▁\"",
                               p.contains("replacement") ? quote(p["replacement"]) : "missing"));
        if (flag("split", true)) refuse("pre_tokenizer Metaspace's \"split\" true is not supported (a piece a word)");
        const json scheme = p.value("prepend_scheme", json(flag("add_prefix_space", true) ? "always" : "never"));
        if (scheme != "always" && scheme != "first" && scheme != "never")
            refuse(fmt::format("pre_tokenizer Metaspace's \"prepend_scheme\" is {}", quote(scheme)));
        kind = Kind::sentencepiece;
        metaspace = true;
        prepend = scheme != "never";
        prepend_first_only = scheme == "first";
    } else {
        refuse(
            fmt::format("pre_tokenizer {} is not supported (ByteLevel, Split with a Regex, Digits, Metaspace and "
                        "a Sequence of the first three are)",
                        type_of(p)));
    }
}

void HfTokenizer::Tables::read_normalizer(const json& n) {
    if (n.is_null()) return;
    // Only Llama 2's (and TinyLlama's): Sequence [Prepend "▁", Replace " " -> "▁"], in either order
    const auto is_prepend = [](const json& e) {
        return e.is_object() && type_field(e) == "Prepend" && e.value("prepend", json()) == std::string(kSpaceMark);
    };
    const auto is_replace = [](const json& e) {
        return e.is_object() && type_field(e) == "Replace" && e.value("content", json()) == std::string(kSpaceMark) &&
               e.contains("pattern") && e["pattern"] == json({{"String", " "}});
    };
    if (n.is_object() && type_field(n) == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
        const json& list = n["normalizers"];
        for (const json& e : list)
            if (!is_prepend(e) && !is_replace(e))
                refuse(
                    fmt::format("normalizer {} is not supported (only SentencePiece's Prepend \"▁\" and Replace "
                                "\" \" with \"▁\")",
                                type_of(e)));
        if (list.size() == 2 && (is_prepend(list[0]) != is_prepend(list[1]))) {
            kind = Kind::sentencepiece;
            prepend = true;
            return;
        }
        refuse("normalizer Sequence must be exactly Prepend \"▁\" and Replace \" \" with \"▁\"");
    }
    refuse(
        fmt::format("normalizer {} is not supported (only SentencePiece's Prepend \"▁\" and Replace \" \" with "
                    "\"▁\", in a Sequence)",
                    type_of(n)));
}

void HfTokenizer::Tables::read_decoder(const json& d, bool top) {
    if (d.is_null() && top) return;
    const std::string type = type_field(d);
    if (type == "Sequence" && top && d.contains("decoders") && d["decoders"].is_array()) {
        for (const json& each : d["decoders"]) read_decoder(each, false);
    } else if (type == "ByteLevel" && kind == Kind::byte_level) {
    } else if (type == "ByteFallback") {
        decode_bytes = true;
    } else if (type == "Fuse") {  // (the tokens' texts joined: what decode does anyway)
    } else if (type == "Replace" && d.value("content", json()) == " " && d.contains("pattern") &&
               d["pattern"] == json({{"String", std::string(kSpaceMark)}})) {
    } else if (type == "Strip" && d.value("content", json()) == " " && d.value("start", json()) == 1 &&
               d.value("stop", json()) == 0) {
        strip_leading_space = true;
    } else if (type == "Metaspace" && kind == Kind::sentencepiece) {
        strip_leading_space = prepend;
    } else {
        refuse(
            fmt::format("decoder {} is not supported (ByteLevel; or Replace \"▁\" with \" \", ByteFallback, Fuse "
                        "and Strip one leading space; or Metaspace)",
                        type_of(d)));
    }
}

void HfTokenizer::Tables::read_post_processor(const json& p, bool top) {
    if (p.is_null() && top) return;
    const std::string type = type_field(p);
    if (type == "Sequence" && top && p.contains("processors") && p["processors"].is_array()) {
        for (const json& each : p["processors"]) read_post_processor(each, false);
    } else if (type == "ByteLevel") {  // (offsets only)
    } else if (type == "TemplateProcessing" && p.contains("single") && p["single"].is_array()) {
        const json& single = p["single"];
        const auto is_a = [](const json& e) {
            return e.is_object() && e.contains("Sequence") && e["Sequence"].is_object() &&
                   e["Sequence"].value("id", json()) == "A";
        };
        if (single.size() == 1 && is_a(single[0])) return;
        if (single.size() == 2 && is_a(single[1]) && single[0].is_object() && single[0].contains("SpecialToken") &&
            single[0]["SpecialToken"].contains("id") && single[0]["SpecialToken"]["id"].is_string()) {
            const std::string name = single[0]["SpecialToken"]["id"].get<std::string>();
            const auto it = id_of.find(name);
            if (it == id_of.end())
                refuse(fmt::format("post_processor TemplateProcessing's token {} is not a token", quoted_text(name)));
            bos = it->second;
            return;
        }
        refuse(
            fmt::format("post_processor TemplateProcessing's \"single\" {} is not supported (only $A, or one "
                        "special token then $A: a BOS)",
                        quote(single)));
    } else {
        refuse(fmt::format("post_processor {} is not supported (ByteLevel, and TemplateProcessing with a BOS)",
                           type_of(p)));
    }
}

void HfTokenizer::Tables::read_model(const json& m) {
    if (!m.is_object()) refuse(fmt::format("\"model\" is {}, not an object", quote(m)));
    if (m.value("type", json()) != "BPE")
        refuse(fmt::format("model {} is not supported: only BPE (Unigram, WordPiece and WordLevel are not)",
                           m.contains("type") ? quote(m["type"]) : "without a \"type\""));
    for (const auto& [key, value] : m.items()) {
        if (key == "type" || key == "vocab" || key == "merges" || key == "unk_token") continue;
        if (key == "fuse_unk" || key == "byte_fallback" || key == "ignore_merges") {
            if (!value.is_boolean()) refuse(fmt::format("model's \"{}\" is {}, not true or false", key, quote(value)));
            (key == "fuse_unk" ? fuse_unk : key == "byte_fallback" ? byte_fallback : ignore_merges) = value.get<bool>();
        } else if (key == "dropout") {
            if (!value.is_null() && !(value.is_number() && value.get<double>() == 0.0))
                refuse(fmt::format("model's \"dropout\" {} is not supported (BPE-dropout: encoding is not repeatable)",
                                   quote(value)));
        } else if (key == "continuing_subword_prefix" || key == "end_of_word_suffix") {
            if (!value.is_null() && value != "")
                refuse(fmt::format("model's \"{}\" {} is not supported", key, quote(value)));
        } else {
            refuse(fmt::format("model's \"{}\" is not supported", key));
        }
    }
    if (!m.contains("vocab") || !m["vocab"].is_object()) refuse("model's \"vocab\" is missing or not an object");
    const json& vocab = m["vocab"];
    if (static_cast<int64_t>(vocab.size()) > kMaxVocab)
        refuse(fmt::format("model's \"vocab\" has {} tokens, over the limit of {}", vocab.size(), kMaxVocab));
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= id_bound)
            refuse(
                fmt::format("model's \"vocab\" gives token {} the id {} (ids are 0 to {}: the vocab's and the added "
                            "tokens' count, less one)",
                            quoted_text(token), quote(id), id_bound - 1));
        const auto i = static_cast<size_t>(id.get<int64_t>());
        if (spelled.size() <= i) spelled.resize(i + 1), added.resize(i + 1);
        if (!spelled[i].empty())
            refuse(fmt::format("model's \"vocab\" gives the id {} to both {} and {}", i, quoted_text(spelled[i]),
                               quoted_text(token)));
        if (token.empty()) refuse(fmt::format("model's \"vocab\" has an empty token (id {})", i));
        spelled[i] = token;
        id_of.emplace(token, static_cast<int32_t>(i));
    }
    if (m.contains("unk_token") && !m["unk_token"].is_null()) {
        if (!m["unk_token"].is_string()) refuse(fmt::format("model's \"unk_token\" is {}", quote(m["unk_token"])));
        const auto it = id_of.find(m["unk_token"].get<std::string>());
        if (it == id_of.end())
            refuse(fmt::format("model's \"unk_token\" {} is not in its vocab", quote(m["unk_token"])));
        unk = it->second;
    }
    if (!m.contains("merges") || !m["merges"].is_array()) refuse("model's \"merges\" is missing or not a list");
    int32_t rank = 0;
    for (const json& merge : m["merges"]) {
        std::string left, right;
        if (merge.is_string()) {  // "left right"
            const std::string s = merge.get<std::string>();
            const size_t space = s.find(' ');
            if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
                refuse(fmt::format("merge {} is not two tokens separated by one space", rank));
            left = s.substr(0, space), right = s.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get<std::string>(), right = merge[1].get<std::string>();
        } else {
            refuse(fmt::format("merge {} is {}, not \"left right\" or [left, right]", rank, quote(merge)));
        }
        const auto l = id_of.find(left), r = id_of.find(right), result = id_of.find(left + right);
        if (l == id_of.end() || r == id_of.end() || result == id_of.end())
            refuse(fmt::format("merge {} ({} {}): {} is not in the vocab", rank, quoted_text(left), quoted_text(right),
                               quoted_text(l == id_of.end()   ? left
                                           : r == id_of.end() ? right
                                                              : left + right)));
        if (!merges.emplace(pair_key(l->second, r->second), std::pair{rank, result->second}).second)
            refuse(fmt::format("merge {} ({} {}) is listed twice", rank, quoted_text(left), quoted_text(right)));
        ++rank;
    }
}

void HfTokenizer::Tables::read(const json& j) {
    if (!j.is_object()) refuse(fmt::format("is not a JSON object but {}", j.type_name()));
    for (const auto& [key, value] : j.items()) {
        if (key == "version" || key == "added_tokens" || key == "normalizer" || key == "pre_tokenizer" ||
            key == "model" || key == "post_processor" || key == "decoder")
            continue;
        if ((key == "truncation" || key == "padding") && value.is_null()) continue;
        refuse(fmt::format("\"{}\" {} is not supported", key, quote(value)));
    }
    if (!j.contains("model")) refuse("\"model\" is missing");
    // ids are 0 to n - 1 for n tokens: a bound before any table is sized by an id from the file
    id_bound =
        (j["model"].is_object() && j["model"].contains("vocab") ? static_cast<int64_t>(j["model"]["vocab"].size())
                                                                : 0) +
        (j.contains("added_tokens") && j["added_tokens"].is_array() ? static_cast<int64_t>(j["added_tokens"].size())
                                                                    : 0);
    read_model(j["model"]);
    // added tokens: in the vocab with the same id, or new ids after it
    if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
        if (!j["added_tokens"].is_array()) refuse("\"added_tokens\" is not a list");
        for (const json& a : j["added_tokens"]) {
            if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
                !a["content"].is_string() || a["content"].get<std::string>().empty())
                refuse(fmt::format("added token {} has no \"id\" and \"content\"", quote(a)));
            const std::string content = a["content"].get<std::string>();
            for (const char* key : {"single_word", "lstrip", "rstrip"})
                if (a.value(key, false) != false)
                    refuse(fmt::format("added token {}'s \"{}\" true is not supported", quoted_text(content), key));
            const int64_t id = a["id"].get<int64_t>();
            if (id < 0 || id >= id_bound)
                refuse(fmt::format("added token {}'s id is {}, not 0 to {}", quoted_text(content), id, id_bound - 1));
            const auto i = static_cast<size_t>(id);
            if (spelled.size() <= i) spelled.resize(i + 1), added.resize(i + 1);
            if (!spelled[i].empty() && spelled[i] != content)
                refuse(fmt::format("added token {} has the id {} of {}", quoted_text(content), id,
                                   quoted_text(spelled[i])));
            if (const auto it = id_of.find(content); it != id_of.end() && it->second != static_cast<int32_t>(id))
                refuse(fmt::format("added token {} has the id {}, but the vocab gives it {}", quoted_text(content), id,
                                   it->second));
            spelled[i] = content;
            id_of.emplace(content, static_cast<int32_t>(id));
            added[i] = true;
            special.resize(spelled.size());
            special[i] = a.value("special", false) == true;
            added_tokens.emplace_back(content, static_cast<int32_t>(id));
        }
    }
    special.resize(spelled.size());
    added.resize(spelled.size());
    for (size_t i = 0; i < spelled.size(); ++i)
        if (spelled[i].empty())
            refuse(fmt::format("no token has the id {} (ids must be 0 to {})", i, spelled.size() - 1));
    // the longest first, so the longest added token at a place is found first
    std::ranges::sort(added_tokens, [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });

    kind = byte_fallback ? Kind::sentencepiece : Kind::byte_level;
    read_normalizer(j.value("normalizer", json()));
    if (kind == Kind::sentencepiece && !splits.empty()) refuse("SentencePiece's \"▁\" beside a pre_tokenizer split");
    read_pre_tokenizer(j.value("pre_tokenizer", json()), true);
    if (kind == Kind::byte_level) {
        if (splits.empty() || splits.back().code || splits.back().pattern != "ByteLevel")
            refuse(
                "neither byte-level (a pre_tokenizer ByteLevel, last) nor SentencePiece's \"▁\" (a normalizer "
                "Prepend and Replace, or a pre_tokenizer Metaspace)");
        splits.pop_back();  // (the mapping, not a split)
        for (const Regex& r : splits)
            if (!r.code) refuse("pre_tokenizer ByteLevel must come last in the Sequence");
        if (byte_fallback) refuse("model's \"byte_fallback\" true beside a ByteLevel pre_tokenizer");
        for (int b = 0; b < 256; ++b) {
            std::string s;
            detail::append_utf8(s, stand_in[static_cast<size_t>(b)]);
            const auto it = id_of.find(s);
            if (it == id_of.end())
                refuse(fmt::format("byte 0x{:02X} has no token {} (byte-level BPE needs all 256)", b, s));
            byte_token[static_cast<size_t>(b)] = it->second;
            byte_of[stand_in[static_cast<size_t>(b)]] = static_cast<unsigned char>(b);
        }
    } else {
        for (int b = 0; b < 256; ++b) {
            const auto it = id_of.find(fmt::format("<0x{:02X}>", b));
            byte_token[static_cast<size_t>(b)] = it == id_of.end() ? -1 : it->second;
        }
    }
    read_decoder(j.value("decoder", json()), true);
    read_post_processor(j.value("post_processor", json()), true);
}

// The pieces of `text` by one pattern, "Isolated": each match a piece, and the text between matches too.
std::vector<std::string_view> HfTokenizer::Tables::split(std::string_view text, const Regex& r) const {
    std::vector<std::string_view> out;
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(r.code.get(), nullptr), &pcre2_match_data_free);
    if (!match) throw std::bad_alloc();
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t offset = 0, last = 0;
    while (offset < text.size()) {
        const int rc =
            pcre2_match(r.code.get(), subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) refuse(fmt::format("the pattern {} failed (PCRE2 code {})", quoted_text(r.pattern, 60), rc));
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        const size_t begin = ovector[0], end = ovector[1];
        if (end == begin) {  // an empty match splits nothing: on by one character
            offset = begin + std::max<size_t>(1, detail::decode_one(text, begin).length);
            continue;
        }
        if (begin > last) out.push_back(text.substr(last, begin - last));
        out.push_back(text.substr(begin, end - begin));
        offset = last = end;
    }
    if (last < text.size()) out.push_back(text.substr(last));
    return out;
}

// The `tokenizers` library's Word::merge_all: the pair of lowest rank, the leftmost of equal ranks, merged
// one at a time; a heap entry gone stale (its left symbol merged away or changed) is skipped.
void HfTokenizer::Tables::merge(std::vector<int32_t>& symbols) const {
    const auto n = static_cast<int32_t>(symbols.size());
    if (n < 2) return;
    std::vector<int32_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
    std::vector<bool> alive(static_cast<size_t>(n), true);
    for (int32_t i = 0; i < n; ++i)
        prev[static_cast<size_t>(i)] = i - 1, next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
    struct Candidate {
        int32_t rank, pos, result;
        bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    const auto consider = [&](int32_t pos) {
        const int32_t right = next[static_cast<size_t>(pos)];
        if (right < 0) return;
        const auto it = merges.find(pair_key(symbols[static_cast<size_t>(pos)], symbols[static_cast<size_t>(right)]));
        if (it != merges.end()) heap.push({it->second.first, pos, it->second.second});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i);
    while (!heap.empty()) {
        const Candidate top = heap.top();
        heap.pop();
        const auto pos = static_cast<size_t>(top.pos);
        if (!alive[pos] || next[pos] < 0) continue;
        const auto right = static_cast<size_t>(next[pos]);
        const auto it = merges.find(pair_key(symbols[pos], symbols[right]));
        if (it == merges.end() || it->second.second != top.result) continue;
        symbols[pos] = top.result;
        alive[right] = false;
        next[pos] = next[right];
        if (next[pos] >= 0) prev[static_cast<size_t>(next[pos])] = top.pos;
        if (prev[pos] >= 0) consider(prev[pos]);
        consider(top.pos);
    }
    size_t kept = 0;
    for (size_t i = 0; i < symbols.size(); ++i)
        if (alive[i]) symbols[kept++] = symbols[i];
    symbols.resize(kept);
}

void HfTokenizer::Tables::encode_section(std::string_view text, bool first, std::vector<int64_t>& out) const {
    std::vector<int32_t> symbols;
    const auto emit = [&] {
        for (int32_t s : symbols) out.push_back(s);
        symbols.clear();
    };
    if (kind == Kind::byte_level) {
        std::vector<std::string_view> pieces{text};
        for (const Regex& r : splits) {
            std::vector<std::string_view> finer;
            for (std::string_view p : pieces)
                for (std::string_view q : split(p, r)) finer.push_back(q);
            pieces = std::move(finer);
        }
        std::string mapped;
        for (std::string_view piece : pieces) {
            if (ignore_merges) {  // a piece that is a token is taken whole (Llama 3's tokenizer)
                mapped.clear();
                for (char c : piece) detail::append_utf8(mapped, stand_in[static_cast<unsigned char>(c)]);
                if (const auto it = id_of.find(mapped); it != id_of.end()) {
                    out.push_back(it->second);
                    continue;
                }
            }
            for (char c : piece) symbols.push_back(byte_token[static_cast<unsigned char>(c)]);
            merge(symbols);
            emit();
        }
        return;
    }
    // SentencePiece: "▁" for each space, one in front, the whole section one piece of characters
    const bool in_front = prepend && (first || !prepend_first_only) && !(metaspace && text.starts_with(' '));
    std::string normalized = in_front ? std::string(kSpaceMark) : std::string();
    for (char c : text) {
        if (c == ' ') normalized.append(kSpaceMark);
        else normalized.push_back(c);
    }
    if (ignore_merges)
        if (const auto it = id_of.find(normalized); it != id_of.end()) {
            out.push_back(it->second);
            return;
        }
    for (size_t i = 0; i < normalized.size();) {
        const size_t length = detail::decode_one(normalized, i).length;
        const std::string_view ch = std::string_view(normalized).substr(i, length);
        if (const auto it = id_of.find(std::string(ch)); it != id_of.end()) {
            symbols.push_back(it->second);
        } else if (byte_fallback &&
                   std::ranges::all_of(ch, [&](char c) { return byte_token[static_cast<unsigned char>(c)] >= 0; })) {
            for (char c : ch) symbols.push_back(byte_token[static_cast<unsigned char>(c)]);
        } else {
            if (unk < 0)
                refuse(fmt::format("the character {} at byte {} has no token, and there is no unk_token",
                                   quoted_text(ch), i));
            if (!(fuse_unk && !symbols.empty() && symbols.back() == unk)) symbols.push_back(unk);
        }
        i += length;
    }
    merge(symbols);
    emit();
}

HfTokenizer::HfTokenizer(std::string_view text, std::string_view source) {
    auto t = std::make_shared<Tables>();
    t->file = std::string(text);
    t->source = std::string(source);
    const nlohmann::json j = detail::parse_json(text, kMaxDepth, t->source);
    try {
        t->read(j);
    } catch (const nlohmann::json::exception& e) {  // a field of an unexpected JSON type the checks did not name
        t->refuse(fmt::format("a field of an unexpected type ({})", detail::json_error_text(e)));
    }
    tables_ = std::move(t);
}

HfTokenizer HfTokenizer::from_file(const std::filesystem::path& path) {
    const std::string text = detail::read_regular_file(path, kMaxFileBytes, "", "a tokenizer.json");
    return HfTokenizer(text, detail::path_str(path));
}

bool HfTokenizer::in_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    const auto it = metadata.find("tokenizer.kind");
    return it != metadata.end() && it->second == kKind;
}

HfTokenizer HfTokenizer::from_checkpoint_metadata(const std::map<std::string, std::string>& metadata) {
    const auto it = metadata.find("tokenizer.hf.json");
    if (!in_checkpoint_metadata(metadata) || it == metadata.end())
        throw std::invalid_argument(
            fmt::format("the metadata holds no tokenizer.json (tokenizer.kind {}, tokenizer.hf.json)", kKind));
    HfTokenizer tok(it->second, "the checkpoint's tokenizer.hf.json");
    // The model folder's ids, when the checkpoint kept them: a whole number, checked against the vocabulary
    const auto id = [&](const std::string& key) -> std::optional<int64_t> {
        const auto found = metadata.find(key);
        if (found == metadata.end()) return std::nullopt;
        const std::string& text = found->second;
        const bool digits = !text.empty() && text.size() <= 10 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) throw std::invalid_argument(fmt::format("metadata '{}' is '{}', not a token id", key, text));
        return std::stoll(text);
    };
    return tok.with_model_ids({.bos = id(kBosKey), .eos = id(kEosKey)});
}

std::map<std::string, std::string> HfTokenizer::checkpoint_metadata() const {
    std::map<std::string, std::string> out = {{"tokenizer.kind", std::string(kKind)},
                                              {"tokenizer.hf.json", tables_->file}};
    if (model_ids_.bos) out.emplace(kBosKey, std::to_string(*model_ids_.bos));
    if (model_ids_.eos) out.emplace(kEosKey, std::to_string(*model_ids_.eos));
    return out;
}

HfTokenizer HfTokenizer::with_model_ids(ModelIds ids) const {
    for (const auto& [name, id] : {std::pair{"bos_token_id", ids.bos}, std::pair{"eos_token_id", ids.eos}})
        if (id && (*id < 0 || *id >= vocab_size()))
            throw std::invalid_argument(fmt::format("{}: the model's {} {} is outside its vocabulary of {} tokens",
                                                    tables_->source, name, *id, vocab_size()));
    HfTokenizer out = *this;
    out.model_ids_ = ids;
    return out;
}

int64_t HfTokenizer::vocab_size() const { return static_cast<int64_t>(tables_->spelled.size()); }
HfTokenizer::Kind HfTokenizer::kind() const { return tables_->kind; }
std::optional<int64_t> HfTokenizer::bos() const { return tables_->bos; }
std::string_view HfTokenizer::json_text() const { return tables_->file; }

const std::string& HfTokenizer::token(int64_t id) const {
    autograd::check(id >= 0 && id < vocab_size(), "HfTokenizer: id {} is outside the vocabulary of {}", id,
                    vocab_size());
    return tables_->spelled[static_cast<size_t>(id)];
}
int64_t HfTokenizer::token_id(std::string_view spelled) const {
    const auto it = tables_->id_of.find(std::string(spelled));
    return it == tables_->id_of.end() ? -1 : it->second;
}
bool HfTokenizer::special(int64_t id) const {
    (void)token(id);  // (checks the id)
    return tables_->special[static_cast<size_t>(id)];
}

std::vector<int64_t> HfTokenizer::encode(std::string_view text) const {
    const Tables& t = *tables_;
    detail::check_utf8(text, "HfTokenizer: encode");
    std::vector<int64_t> out;
    size_t start = 0;  // the section of ordinary text being gathered
    for (size_t i = 0; i < text.size();) {
        const auto found =
            std::ranges::find_if(t.added_tokens, [&](const auto& a) { return text.substr(i).starts_with(a.first); });
        if (found == t.added_tokens.end()) {
            ++i;
            continue;
        }
        if (i > start) t.encode_section(text.substr(start, i - start), start == 0, out);
        out.push_back(found->second);
        i += found->first.size();
        start = i;
    }
    if (start < text.size()) t.encode_section(text.substr(start), start == 0, out);
    return out;
}

TokenIds HfTokenizer::encode_ids(std::string_view text) const {
    const std::vector<int64_t> ids = encode(text);
    return TokenIds(std::span<const int64_t>(ids));
}

std::string HfTokenizer::decode(std::span<const int64_t> ids) const { return decode_text(ids, true); }

std::string HfTokenizer::piece(int64_t previous, int64_t id) const {
    // the decoder's Strip drops the space a text starts with: at the start, or after a special token (BOS)
    return decode_text(std::span(&id, 1), previous < 0 || special(previous));
}

std::string HfTokenizer::decode_text(std::span<const int64_t> ids, bool strip) const {
    const Tables& t = *tables_;
    std::string out;
    for (size_t k = 0; k < ids.size(); ++k) {
        const int64_t id = ids[k];
        autograd::check(id >= 0 && id < vocab_size(),
                        "HfTokenizer: decode: id {} at position {} is outside the vocabulary of {}", id, k,
                        vocab_size());
        const std::string& s = t.spelled[static_cast<size_t>(id)];
        if (t.added[static_cast<size_t>(id)]) {
            out += s;
        } else if (t.kind == Kind::byte_level) {
            detail::decode_utf8(s, "HfTokenizer: decode", [&](char32_t c) {
                const auto it = t.byte_of.find(c);
                if (it != t.byte_of.end()) out.push_back(static_cast<char>(it->second));
                else detail::append_utf8(out, c);  // (not a stand-in: as it is)
            });
        } else if (const int byte = byte_token_value(s); t.decode_bytes && byte >= 0) {
            out.push_back(static_cast<char>(byte));
        } else {
            for (size_t i = 0; i < s.size();) {
                if (std::string_view(s).substr(i).starts_with(kSpaceMark)) {
                    out.push_back(' ');
                    i += kSpaceMark.size();
                } else {
                    out.push_back(s[i++]);
                }
            }
        }
    }
    if (strip && t.strip_leading_space && !out.empty() && out.front() == ' ') out.erase(0, 1);
    return out;
}

}  // namespace nn
