// What the safetensors writer (safetensors_write.cpp) and reader (safetensors.cpp) share, private to
// nn/model_files/src: the reserved names, the CRC32C of a tensor's bytes and of the metadata, the
// little-endian layout, and how a name from a file is shown in a message.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <autograd/tensor.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace nn::detail {

inline constexpr const char* kMetadataKey = "__metadata__";
inline constexpr std::string_view kChecksumPrefix = "crc32c.";  // + a tensor's name: its CRC32C, 8 hex digits
inline constexpr std::string_view kMetadataChecksum = "crc32c.__metadata__";  // the other metadata's CRC32C

// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, as iSCSI and ext4 use it), a byte at a time.
class Crc32c {
public:
    void add(const void* data, size_t size) {
        static const auto table = [] {
            std::array<uint32_t, 256> t{};
            for (uint32_t i = 0; i < 256; ++i) {
                uint32_t c = i;
                for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
                t[i] = c;
            }
            return t;
        }();
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < size; ++i) state_ = table[(state_ ^ p[i]) & 0xFF] ^ (state_ >> 8);
    }
    uint32_t value() const { return ~state_; }

private:
    uint32_t state_ = ~uint32_t{0};
};

inline std::string checksum_text(uint32_t crc) { return fmt::format("{:08x}", crc); }

// The CRC32C of the metadata (every entry but kMetadataChecksum, the tensors' checksums included) in
// key order, each key and value as its 8-byte little-endian length and its bytes: the tensors' own
// checksums cover only their values, so a changed setting ("model.n_head": "4" -> "8") is caught by this.
inline std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
    Crc32c crc;
    const auto add = [&crc](std::string_view text) {
        unsigned char length[8];
        for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(uint64_t{text.size()} >> (8 * i));
        crc.add(length, 8);
        crc.add(text.data(), text.size());
    };
    for (const auto& [key, value] : metadata)  // (std::string orders bytes as unsigned, so UTF-8 by code point)
        if (key != kMetadataChecksum) add(key), add(value);
    return checksum_text(crc.value());
}

// A name from a file, quoted and escaped as JSON (control characters cannot break the message), and
// shortened if a hostile header made it long.
inline std::string quoted_name(const std::string& name) {
    constexpr size_t kMax = 80;
    std::string shown = nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (shown.size() > kMax) shown = shown.substr(0, kMax) + "...\"";
    return shown;
}

inline void store_le64(unsigned char* out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint64_t load_le64(const unsigned char* in) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{in[i]} << (8 * i);
    return v;
}

inline void to_or_from_little_endian(std::span<float> values) {
    if constexpr (std::endian::native == std::endian::big) {
        for (float& v : values) v = std::bit_cast<float>(__builtin_bswap32(std::bit_cast<uint32_t>(v)));
    } else {
        (void)values;
    }
}

// Calls use(bytes, size) with a tensor's values as stored on disk: float32, little-endian (a swapped
// copy on a big-endian host). The checksum and the file's data section both read them through here.
template <typename Use>
void with_stored_bytes(const autograd::Tensor& t, Use&& use) {
    if constexpr (std::endian::native == std::endian::little) {
        use(t.data().data(), t.data().size_bytes());
    } else {
        std::vector<float> copy = t.to_vector();
        to_or_from_little_endian(copy);
        use(copy.data(), copy.size() * sizeof(float));
    }
}

}  // namespace nn::detail
