// safetensors reading (writing: safetensors_write.cpp; a module's: module_weights.cpp). What load_safetensors
// rejects, each with the path and the numbers:
//   - a missing, unreadable or non-regular file (a directory), a file over limits.max_file_bytes;
//   - fewer than 8 bytes; a header length past the end of the file or over limits.max_header_bytes;
//   - a header that is not JSON, not an object, or repeats a key (a tensor name, or a field of an entry);
//   - an entry that is not an object with "dtype" (a string, and "F32"), "shape" (non-negative integers
//     whose product does not overflow) and "data_offsets" ([begin, end], begin <= end,
//     end - begin = 4 * numel); "__metadata__" that is not an object of strings;
//   - offsets that, sorted by begin, do not start at 0 and follow each other exactly (overlap or gap), or
//     that end before or after the end of the file (trailing bytes, truncation);
//   - checksums (metadata "crc32c.NAME", written by save_safetensors since they were added) that are not
//     8 hex digits, name no tensor, are missing for a tensor while others have theirs, or do not match
//     the tensor's bytes. A file with no checksum at all (written before) loads, with one warning.
// Nothing is allocated from the file's numbers until all of this has passed; the data is then read once,
// straight into the tensors (SafetensorsReader: a new model's own parameters), each checksum verified as
// its tensor is read, F16 and BF16 widened through a bounded buffer.
#include "nn/model_files/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <set>
#include <stdexcept>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/file_names.h>

#include "safetensors_format.h"

namespace nn {

using autograd::check;
using autograd::shape_str;
using autograd::Tensor;
using detail::checksum_text;
using detail::Crc32c;
using detail::kChecksumPrefix;
using detail::kMetadataChecksum;
using detail::kMetadataKey;
using detail::load_le64;
using detail::metadata_checksum;
using detail::path_str;
using detail::quoted_name;
using detail::to_or_from_little_endian;

namespace {

WarningHandler& warning_handler() {
    static WarningHandler handler = [](const std::string& message) { fmt::print(stderr, "warning: {}\n", message); };
    return handler;
}

struct FileCloser {
    int fd = -1;
    ~FileCloser() {
        if (fd >= 0) ::close(fd);
    }
};

using Entry = SafetensorsReader::Entry;

class Reader {
public:
    Reader(const std::filesystem::path& path, bool widen_half = false) : path_(path), widen_half_(widen_half) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error(fmt::format("{}: {}", path_str(path_), what));
    }

    // Reads exactly `size` bytes, or fails naming where the file ended.
    void read_exact(int fd, void* out, size_t size) {
        auto* p = static_cast<char*>(out);
        while (size > 0) {
            const ssize_t n = ::read(fd, p, size);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail(fmt::format("read failed at byte {} ({})", position_, std::strerror(errno)));
            if (n == 0)
                fail(fmt::format("the file ends at byte {} while reading (truncated while being read?)", position_));
            p += n;
            size -= static_cast<size_t>(n);
            position_ += static_cast<uint64_t>(n);
        }
    }

    // A JSON array of non-negative integers, or a failure naming `what`.
    std::vector<uint64_t> unsigned_array(const nlohmann::json& value, const std::string& what) const {
        if (!value.is_array())
            fail(fmt::format("{} must be an array of non-negative integers, got {}", what, value.type_name()));
        std::vector<uint64_t> out;
        // (an array nested thousands deep is named by its first element's kind: dump() would recurse that deep)
        const bool flat =
            std::none_of(value.begin(), value.end(), [](const nlohmann::json& v) { return v.is_structured(); });
        for (const auto& v : value) {
            if (!v.is_number_unsigned())
                fail(fmt::format("{} must be an array of non-negative integers, got {}", what,
                                 flat
                                     ? quoted_name(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
                                     : fmt::format("an array holding an {}", v.type_name())));
            out.push_back(v.get<uint64_t>());
        }
        return out;
    }

    Entry entry(const std::string& name, const nlohmann::json& value) const {
        const std::string who = "tensor " + quoted_name(name);
        if (!value.is_object()) fail(fmt::format("{} must be an object, got {}", who, value.type_name()));
        for (const char* field : {"dtype", "shape", "data_offsets"})
            if (!value.contains(field)) fail(fmt::format("{} has no \"{}\"", who, field));
        const auto& dtype = value.at("dtype");
        if (!dtype.is_string()) fail(fmt::format("{}: \"dtype\" must be a string, got {}", who, dtype.type_name()));
        const std::string& type = dtype.get<std::string>();
        Entry e{name, {}, 0, 0};
        if (widen_half_ && (type == "F16" || type == "BF16")) e.value_bytes = 2, e.bf16 = type == "BF16";
        else if (type != "F32")
            fail(fmt::format("{} has dtype {}; only F32{} is supported", who, quoted_name(type),
                             widen_half_ ? ", F16 and BF16" : ""));

        uint64_t numel = 1;
        for (uint64_t d : unsigned_array(value.at("shape"), who + ": \"shape\"")) {
            constexpr auto kMaxDim = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
            if (d > kMaxDim || (d != 0 && numel > kMaxDim / 4 / d))
                fail(fmt::format("{}: shape {} has too many elements", who, value.at("shape").dump()));
            numel *= d;
            e.shape.push_back(static_cast<int64_t>(d));
        }
        const auto offsets = unsigned_array(value.at("data_offsets"), who + ": \"data_offsets\"");
        if (offsets.size() != 2 || offsets[0] > offsets[1])
            fail(fmt::format("{}: \"data_offsets\" must be [begin, end] with begin <= end, got {}", who,
                             value.at("data_offsets").dump()));
        e.begin = offsets[0];
        e.end = offsets[1];
        if (e.end - e.begin != e.value_bytes * numel)
            fail(fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but shape {} of {} needs {}", who, e.begin,
                             e.end, e.end - e.begin, shape_str(e.shape), type, e.value_bytes * numel));
        return e;
    }

private:
    std::filesystem::path path_;
    bool widen_half_;
    uint64_t position_ = 0;
};

// Parses the header, rejecting a key repeated within one object (nlohmann::json would keep the last).
nlohmann::json parse_header(const std::string& header, const Reader& reader) {
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    bool duplicate_is_tensor = false;
    const auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        using E = nlohmann::json::parse_event_t;
        if (event == E::object_start) {
            open_objects.emplace_back();
        } else if (event == E::object_end) {
            open_objects.pop_back();
        } else if (event == E::key && duplicate.empty() && !open_objects.empty() &&
                   !open_objects.back().insert(parsed.get<std::string>()).second) {
            duplicate = parsed.get<std::string>();
            duplicate_is_tensor = open_objects.size() == 1;
        }
        return true;
    };
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(header, on_event);
    } catch (const nlohmann::json::exception& e) {
        reader.fail(fmt::format("the header is not valid JSON ({})", e.what()));
    }
    if (!duplicate.empty())
        reader.fail(duplicate_is_tensor
                        ? fmt::format("the header names tensor {} twice", quoted_name(duplicate))
                        : fmt::format("the header repeats the key {} in one object", quoted_name(duplicate)));
    if (!j.is_object()) reader.fail(fmt::format("the header is not a JSON object but {}", j.type_name()));
    return j;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path, const SafetensorsLimits& limits)
    : path_(path), limits_(limits) {
    Reader reader(path, limits.widen_half);
    // (O_NONBLOCK: a named pipe is refused below instead of waiting for a writer)
    FileCloser file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (file.fd < 0) reader.fail(fmt::format("cannot open ({})", std::strerror(errno)));
    struct stat st {};
    if (::fstat(file.fd, &st) != 0) reader.fail(fmt::format("cannot stat ({})", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) reader.fail(fmt::format("is {}, not a safetensors file", file_kind(st.st_mode)));

    const auto file_size = static_cast<uint64_t>(st.st_size);
    if (file_size > limits.max_file_bytes)
        reader.fail(fmt::format("the file is {} bytes, over the limit of {}", file_size, limits.max_file_bytes));
    if (file_size < 8)
        reader.fail(fmt::format("the file is {} bytes, too short for the 8-byte header length", file_size));
    unsigned char length_bytes[8];
    reader.read_exact(file.fd, length_bytes, 8);
    const uint64_t header_size = load_le64(length_bytes);
    if (header_size > file_size - 8)
        reader.fail(fmt::format("the header length {} runs past the end of the file ({} bytes follow the length)",
                                header_size, file_size - 8));
    if (header_size > limits.max_header_bytes)
        reader.fail(fmt::format("the header length {} is over the limit of {}", header_size, limits.max_header_bytes));
    std::string header_text(header_size, '\0');
    reader.read_exact(file.fd, header_text.data(), header_text.size());

    const nlohmann::json header = parse_header(header_text, reader);
    std::vector<Entry>& entries = entries_;
    std::map<std::string, std::string>& checksums = checksums_;  // tensor name -> 8 hex digits
    std::map<std::string, std::string> all_metadata;             // the checksums too, for the metadata's own
    for (const auto& [name, value] : header.items()) {
        if (name == kMetadataKey) {
            if (!value.is_object())
                reader.fail(
                    fmt::format("\"{}\" must be an object of strings, got {}", kMetadataKey, value.type_name()));
            for (const auto& [key, v] : value.items()) {
                if (!v.is_string())
                    reader.fail(fmt::format("\"{}\" must be an object of strings, but {} is {}", kMetadataKey,
                                            quoted_name(key), v.type_name()));
                all_metadata.emplace(key, v.get<std::string>());
                if (key == kMetadataChecksum) continue;
                if (key.starts_with(kChecksumPrefix))
                    checksums.emplace(key.substr(kChecksumPrefix.size()), v.get<std::string>());
                else metadata_.emplace(key, v.get<std::string>());
            }

        } else {
            // save_safetensors refuses it too: no module has a parameter without a name
            if (name.empty()) reader.fail("a tensor has an empty name");
            entries.push_back(reader.entry(name, value));
        }
    }

    // Sorted by begin, the tensors must tile the data section exactly: no overlap, no gap, no tail.
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const uint64_t data_size = file_size - 8 - header_size;
    uint64_t expected = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (e.begin < expected)
            reader.fail(fmt::format("tensor {} (data_offsets [{}, {}]) overlaps tensor {} (data_offsets [{}, {}])",
                                    quoted_name(e.name), e.begin, e.end, quoted_name(entries[i - 1].name),
                                    entries[i - 1].begin, entries[i - 1].end));
        if (e.begin > expected)
            reader.fail(
                fmt::format("a gap of {} bytes before tensor {} (data_offsets [{}, {}]): the data before it ends at {}",
                            e.begin - expected, quoted_name(e.name), e.begin, e.end, expected));
        if (e.end > data_size)
            reader.fail(
                fmt::format("tensor {} (data_offsets [{}, {}]) ends past the end of the file: the data section "
                            "holds {} bytes (truncated?)",
                            quoted_name(e.name), e.begin, e.end, data_size));
        expected = e.end;
    }
    if (expected != data_size)
        reader.fail(
            fmt::format("{} bytes of trailing data after the last tensor (the tensors end at {}, the data "
                        "section holds {} bytes)",
                        data_size - expected, expected, data_size));

    // Checksums: none at all (a file written before them), or one of 8 hex digits for every tensor.
    checksummed_ = !checksums.empty();
    std::set<std::string_view> tensor_names;  // (a header may hold many entries: no linear search per checksum)
    for (const Entry& e : entries) tensor_names.insert(e.name);
    for (const auto& [name, crc] : checksums) {
        const bool hex = crc.size() == 8 && std::all_of(crc.begin(), crc.end(), [](char c) {
                             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                         });
        if (!hex)
            reader.fail(
                fmt::format("the checksum of tensor {} is not 8 hex digits: {}", quoted_name(name), quoted_name(crc)));
        if (!tensor_names.contains(name))
            reader.fail(fmt::format("a checksum names tensor {}, which the file does not hold", quoted_name(name)));
    }
    if (checksummed_)
        for (const Entry& e : entries)
            if (!checksums.contains(e.name))
                reader.fail(fmt::format("tensor {} has no checksum while the file's other tensors have theirs",
                                        quoted_name(e.name)));
    if (const auto stored = all_metadata.find(std::string(kMetadataChecksum)); stored != all_metadata.end()) {
        const std::string computed = metadata_checksum(all_metadata);
        if (stored->second != computed)
            reader.fail(
                fmt::format("the metadata does not match its checksum (CRC32C {} stored, {} computed): its "
                            "settings were edited or damaged; nothing was loaded",
                            quoted_name(stored->second), computed));
        metadata_checked_ = true;
    }

    file_size_ = file_size;
    data_start_ = 8 + header_size;
    fd_ = std::exchange(file.fd, -1);  // kept open for the reads
}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& other) noexcept
    : path_(std::move(other.path_)),
      limits_(other.limits_),
      fd_(std::exchange(other.fd_, -1)),
      file_size_(other.file_size_),
      data_start_(other.data_start_),
      entries_(std::move(other.entries_)),
      metadata_(std::move(other.metadata_)),
      checksums_(std::move(other.checksums_)),
      checksummed_(other.checksummed_),
      metadata_checked_(other.metadata_checked_),
      progress_(std::move(other.progress_)),
      reached_(other.reached_) {}

SafetensorsReader::~SafetensorsReader() {
    if (fd_ >= 0) ::close(fd_);
}

void SafetensorsReader::on_progress(ReadProgress progress) {
    progress_ = std::move(progress);
    report(data_start_);
}

void SafetensorsReader::report(uint64_t reached) {
    reached_ = std::max(reached_, reached);
    if (progress_) progress_(reached_, file_size_);
}

// Reads exactly `size` bytes at `offset`, or fails naming where the file ended; in reads of 64 MiB at
// most, so a progress bar moves through a large tensor.
void SafetensorsReader::read_exact(void* out, size_t size, uint64_t offset) {
    constexpr size_t kMostAtOnce = size_t{64} << 20;
    const Reader reader(path_);
    auto* p = static_cast<char*>(out);
    while (size > 0) {
        const ssize_t n = ::pread(fd_, p, std::min(size, kMostAtOnce), static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) reader.fail(fmt::format("read failed at byte {} ({})", offset, std::strerror(errno)));
        if (n == 0)
            reader.fail(fmt::format("the file ends at byte {} while reading (truncated while being read?)", offset));
        p += n;
        size -= static_cast<size_t>(n);
        offset += static_cast<uint64_t>(n);
        if (progress_) report(offset);
    }
}

namespace {
constexpr size_t kPieceValues = size_t{1} << 20;  // the bounded buffer: 4 MiB of float32
}  // namespace

void SafetensorsReader::read_pieces(size_t i, const std::function<void(std::span<const float>, size_t)>& use) {
    const Entry& e = entries_.at(i);
    const uint64_t numel = (e.end - e.begin) / e.value_bytes;
    std::vector<float> values(static_cast<size_t>(std::min<uint64_t>(numel, kPieceValues)));
    std::vector<unsigned char> raw(e.value_bytes == 2 ? values.size() * 2 : 0);
    Crc32c crc;
    for (uint64_t first = 0; first < numel; first += values.size()) {
        const auto n = static_cast<size_t>(std::min<uint64_t>(numel - first, values.size()));
        const std::span<float> piece(values.data(), n);
        const uint64_t offset = data_start_ + e.begin + first * e.value_bytes;
        if (e.value_bytes == 2) {
            read_exact(raw.data(), 2 * n, offset);
            crc.add(raw.data(), 2 * n);
            for (size_t k = 0; k < n; ++k) {
                const auto bits = static_cast<uint16_t>(raw[2 * k] | raw[2 * k + 1] << 8);
                piece[k] = e.bf16 ? bf16_to_float(bits) : f16_to_float(bits);
            }
        } else {
            read_exact(piece.data(), piece.size_bytes(), offset);
            crc.add(piece.data(), piece.size_bytes());  // the bytes as stored (little-endian)
            to_or_from_little_endian(piece);
        }
        use(piece, static_cast<size_t>(first));
    }
    if (checksummed_ && checksum_text(crc.value()) != checksums_.at(e.name))
        Reader(path_).fail(
            fmt::format("tensor {} does not match its checksum (CRC32C {} stored, {} computed): the file "
                        "is corrupt",
                        quoted_name(e.name), checksums_.at(e.name), checksum_text(crc.value())));
}

void SafetensorsReader::read(size_t i, std::span<float> out) {
    const Entry& e = entries_.at(i);
    check(out.size_bytes() / 4 * e.value_bytes == e.end - e.begin,
          "SafetensorsReader::read: {} values for tensor {} of shape {}", out.size(), quoted_name(e.name),
          shape_str(e.shape));
    if (e.value_bytes == 2) {
        read_pieces(i, [&](std::span<const float> piece, size_t first) {
            std::copy(piece.begin(), piece.end(), out.begin() + first);
        });
        return;
    }
    read_exact(out.data(), out.size_bytes(), data_start_ + e.begin);  // straight into place
    if (checksummed_) {
        Crc32c crc;
        crc.add(out.data(), out.size_bytes());
        if (checksum_text(crc.value()) != checksums_.at(e.name))
            Reader(path_).fail(
                fmt::format("tensor {} does not match its checksum (CRC32C {} stored, {} computed): the file "
                            "is corrupt",
                            quoted_name(e.name), checksums_.at(e.name), checksum_text(crc.value())));
    }
    to_or_from_little_endian(out);
}

void SafetensorsReader::finish() {
    char extra = 0;
    ssize_t n = 0;
    do n = ::pread(fd_, &extra, 1, static_cast<off_t>(file_size_));
    while (n < 0 && errno == EINTR);
    if (n != 0) Reader(path_).fail("the file grew or failed while being read");
    report(file_size_);
    if (!checksummed_ && !entries_.empty() && limits_.warn_without_checksums)
        warning_handler()(
            fmt::format("{} carries no checksums (written before tinygpt stored them): its bytes are not "
                        "verified; saving it again adds them",
                        path_str(path_)));
    else if (checksummed_ && !metadata_checked_ && limits_.warn_without_checksums)
        warning_handler()(
            fmt::format("{} carries no checksum of its metadata (written before tinygpt stored one): its "
                        "settings are not verified; saving it again adds it",
                        path_str(path_)));
}

NamedTensors SafetensorsReader::read_all(const NamedTensors& into, const std::function<bool(const std::string&)>& keep,
                                         const std::optional<std::string>& finite_where) {
    std::map<std::string_view, const Tensor*> places;
    for (const auto& [name, t] : into) places.emplace(name, &t);
    std::optional<std::string> not_finite;  // check_finite's message for the first such value, in file order
    const auto check_values = [&](const Entry& e, std::span<const float> values, size_t first) {
        if (!finite_where || not_finite) return;
        for (size_t k = 0; k < values.size(); ++k)
            if (!std::isfinite(values[k])) {
                not_finite =
                    fmt::format("{}: tensor {} holds {} at index {} (shape {}): refusing to load a non-finite weight",
                                *finite_where, quoted_name(e.name), values[k], first + k, shape_str(e.shape));
                return;
            }
    };
    NamedTensors out;
    for (size_t i = 0; i < entries_.size(); ++i) {
        const Entry& e = entries_[i];
        if (keep && !keep(e.name)) {
            read_pieces(i, [&](std::span<const float> piece, size_t first) { check_values(e, piece, first); });
            continue;
        }
        const auto place = places.find(e.name);
        Tensor t =
            place != places.end() && place->second->shape() == e.shape ? *place->second : autograd::zeros(e.shape);
        read(i, t.data());
        check_values(e, t.data(), 0);
        out.emplace_back(e.name, t);
    }
    finish();
    if (not_finite) throw std::runtime_error(*not_finite);
    return out;
}

Safetensors load_safetensors(const std::filesystem::path& path, const SafetensorsLimits& limits) {
    SafetensorsReader file(path, limits);
    Safetensors out;
    out.tensors = file.read_all({});
    out.metadata = file.metadata();
    out.checksummed = file.checksummed();
    return out;
}

void set_warning_handler(WarningHandler handler) {
    warning_handler() = handler ? std::move(handler) : [](const std::string&) {};
}

float f16_to_float(uint16_t bits) {
    const uint32_t sign = uint32_t{bits & 0x8000u} << 16, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ffu;
    if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | mantissa << 13);  // inf, NaN
    if (exponent != 0) return std::bit_cast<float>(sign | (exponent + 112) << 23 | mantissa << 13);
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
    return sign ? -magnitude : magnitude;
}
float bf16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

}  // namespace nn
