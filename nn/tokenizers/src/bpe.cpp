// GPT-2's BPE encoding and decoding over the tables (bpe_tables.h; loaded by bpe_files.cpp): the
// pre-tokenizer (an ASCII fast path, PCRE2 for the rest), the merges (by rounds, then by a heap), a cache
// of merged pre-tokens, and a text file encoded a piece at a time.
#include "nn/tokenizers/bpe.h"
#include <nn/files/file_names.h>
#include "bpe_tables.h"
#include "utf8.h"

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

#include <autograd/check.h>
#include <fmt/format.h>

namespace nn {

using autograd::check;
using detail::hash_bytes;
using detail::MergeTable;
using detail::pair_key;
using detail::path_str;

namespace {

// A pre-token's merges go by rounds while their pair lookups stay within kRoundsBudget a byte (or
// kRoundsFloor: a word of up to 46 bytes never leaves them), then by the heap (bench/README.md). Rounds
// that each halve the word (a run of one letter: under 2 lookups a byte in all) stay, and beat the heap
// several times; rounds that shrink it little (varied letters) pass 2 a byte within two or three.
constexpr uint64_t kRoundsBudget = 2, kRoundsFloor = 1024;

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
            throw std::runtime_error(
                fmt::format("{}: {} is {}, not {}", who, path_str(path), file_kind(st.st_mode), kind));
        size = static_cast<uint64_t>(st.st_size);
    }

    // Up to `bytes` more bytes into `out` from the current offset; fewer only at the end of the file.
    size_t read(char* out, size_t bytes, const std::filesystem::path& path, std::string_view who) const {
        size_t got = 0;
        while (got < bytes) {
            const ssize_t n = ::read(fd, out + got, bytes - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0)
                throw std::runtime_error(
                    fmt::format("{}: cannot read {} ({})", who, path_str(path), std::strerror(errno)));
            if (n == 0) break;
            got += static_cast<size_t>(n);
        }
        return got;
    }
};

}  // namespace

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
        place(Slot{h, static_cast<uint32_t>(keys.size()), static_cast<uint32_t>(piece.size()),
                   static_cast<uint32_t>(ids.size()), static_cast<uint32_t>(piece_ids.size()), true});
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
        c[static_cast<size_t>(b)] = b >= 0x80                                          ? kNotAscii
                                    : (b >= 0x09 && b <= 0x0D) || b == ' '             ? kSpace
                                    : (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ? kLetter
                                    : b >= '0' && b <= '9'                             ? kDigit
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
        case kLetter:
            return run(start, kLetter);
        case kDigit:
            return run(start, kDigit);
        case kOther:
            return run(start, kOther);
        case kNotAscii:
            return 0;
        case kSpace:
            break;
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
        const int rc =
            jit ? pcre2_jit_match(pattern.get(), subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match.get(), nullptr)
                : pcre2_match(pattern.get(), subject, text.size(), offset, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
        // Every character is a letter, a number, whitespace or none of these, so the pattern matches at
        // every offset; anything else is PCRE2 failing (out of its match limits), not the text.
        check(rc > 0, "BPE tokenizer: PCRE2 failed at byte offset {} (code {})", offset, rc);
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        check(ovector[0] == offset && ovector[1] > offset, "BPE tokenizer: the pattern skipped text at byte offset {}",
              offset);
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
        for (uint32_t k = 0; k < hit->ids_size; ++k)
            out.push_back(static_cast<typename Out::value_type>(scratch.ids[hit->ids + k]));
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
            if (merge && merge->rank < best_rank)
                best_rank = merge->rank, left = word[i], right = word[i + 1], result = merge->result;
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
    std::vector<int32_t>& ranks = scratch.ranks;                // a min-heap of the ranks with places listed
    if (first.empty()) first.assign(merge_list.size(), kNone);  // and left so: each round empties its list
    part.resize(n), listed.clear(), ranks.clear();
    listed.reserve(n);
    for (uint32_t i = 0; i < n; ++i) part[i] = {word[i], i - 1, i + 1};
    uint64_t looked = 0;
    int32_t free = kNone;                // the entries of listed whose rounds are done, chained by next
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
            if (left.token != merge.left || left.next >= n || part[left.next].token != merge.right)
                continue;  // changed since
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

BpeTokenizer::BpeTokenizer(const BpeTokenizer&) = default;
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(const BpeTokenizer&) = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

int64_t BpeTokenizer::vocab_size() const { return static_cast<int64_t>(tables_->bytes_of.size()); }

std::string_view BpeTokenizer::vocabulary_text() const { return tables_->vocabulary_text; }
std::string_view BpeTokenizer::merges_text() const { return tables_->merges_text; }

std::vector<std::string_view> BpeTokenizer::pre_tokenize(std::string_view text, bool pcre2_only) const {
    detail::check_utf8(text, "BPE pre_tokenize");
    std::vector<std::string_view> pieces;
    tables_->pre_tokenize(
        text, [&](std::string_view piece) { pieces.push_back(piece); }, pcre2_only);
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

TokenIds BpeTokenizer::encode_file(const std::filesystem::path& path,
                                   const std::function<void(uint64_t)>& progress) const {
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
        check(ids[i] >= 0 && ids[i] < n, "decode: id {} at position {} is outside the vocabulary [0, {})", ids[i], i,
              n);
        total += t.decode_offset[static_cast<size_t>(ids[i]) + 1] - t.decode_offset[static_cast<size_t>(ids[i])];
    }
    std::string out(total, '\0');
    char* at = out.data();
    for (int64_t id : ids) {
        const uint32_t begin = t.decode_offset[static_cast<size_t>(id)],
                       end = t.decode_offset[static_cast<size_t>(id) + 1];
        std::copy(t.decode_blob.data() + begin, t.decode_blob.data() + end, at);
        at += end - begin;
    }
    return out;
}

std::string_view BpeTokenizer::token_bytes(int64_t id) const {
    check(id >= 0 && id < vocab_size(), "token_bytes: id {} is outside the vocabulary [0, {})", id, vocab_size());
    return tables_->bytes_of[static_cast<size_t>(id)];
}

int64_t BpeTokenizer::token_id(std::string_view bytes) const { return tables_->id_of.find(bytes); }

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
