// safetensors writing: the header (the metadata with every checksum, then the tensors with contiguous
// offsets) and the values, into an AtomicFile, so a failure leaves the file that was there.
#include "nn/model_files/safetensors.h"

#include <set>
#include <stdexcept>
#include <utility>

#include <autograd/check.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nn/files/atomic_file.h>
#include <nn/files/file_names.h>

#include "safetensors_format.h"

namespace nn {

using autograd::check;
using detail::checksum_text;
using detail::Crc32c;
using detail::kChecksumPrefix;
using detail::kMetadataChecksum;
using detail::kMetadataKey;
using detail::metadata_checksum;
using detail::path_str;
using detail::quoted_name;
using detail::store_le64;
using detail::with_stored_bytes;

namespace {

// The header save_safetensors writes for `tensors` and `all_metadata` (the caller's, the tensors'
// checksums): the metadata with its own checksum first, then the tensors in the given order with
// contiguous offsets, padded with spaces to a multiple of 8. One over what load_safetensors reads is
// refused (check_size), so nothing is written that cannot be read back.
std::string make_header(const std::filesystem::path& path, const NamedTensors& tensors,
                        std::map<std::string, std::string> all_metadata, bool check_size = true) {
    all_metadata[std::string(kMetadataChecksum)] = metadata_checksum(all_metadata);
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    header[kMetadataKey] = all_metadata;
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        const uint64_t bytes = 4 * static_cast<uint64_t>(t.numel());
        header[name] = {{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string json;
    try {
        json = header.dump();
    } catch (const nlohmann::json::exception&) {
        throw std::invalid_argument(
            fmt::format("{}: a tensor name or metadata entry is not valid UTF-8", path_str(path)));
    }
    json.append((8 - json.size() % 8) % 8, ' ');  // data starts 8-byte aligned, as the reference writes it
    const uint64_t limit = SafetensorsLimits{}.max_header_bytes;
    if (check_size && json.size() > limit)
        throw std::invalid_argument(
            fmt::format("{}: the header would be {} bytes, over the {} that "
                        "loading reads: nothing was written",
                        path_str(path), json.size(), limit));
    return json;
}

}  // namespace

void write_safetensors(AtomicFile& file, const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
    std::set<std::string_view> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& [name, t] = tensors[i];
        check(!name.empty(), "{}: tensor {} has an empty name", path_str(path), i);
        check(name != kMetadataKey, "{}: the name \"{}\" is reserved for metadata", path_str(path), kMetadataKey);
        check(names.insert(name).second, "{}: the name {} is used twice", path_str(path), quoted_name(name));
        check(t.defined(), "{}: tensor {} is undefined", path_str(path), quoted_name(name));
    }

    for (const auto& [key, value] : metadata)
        check(!key.starts_with(kChecksumPrefix), "{}: metadata key {} is reserved for checksums", path_str(path),
              quoted_name(key));

    std::map<std::string, std::string> all_metadata = metadata;
    for (const auto& [name, t] : tensors) {
        Crc32c crc;
        with_stored_bytes(t, [&](const void* bytes, size_t size) { crc.add(bytes, size); });
        all_metadata[std::string(kChecksumPrefix) + name] = checksum_text(crc.value());
    }
    const std::string json = make_header(path, tensors, std::move(all_metadata));
    unsigned char length[8];
    store_le64(length, json.size());

    file.write(length, sizeof length);
    file.write(json.data(), json.size());
    for (const auto& [name, t] : tensors)
        with_stored_bytes(t, [&](const void* bytes, size_t size) { file.write(bytes, size); });
}

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
    AtomicFile file(path, "safetensors");
    write_safetensors(file, path, tensors, metadata);
    file.commit();
}

uint64_t safetensors_header_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
    std::map<std::string, std::string> all_metadata = metadata;
    for (const auto& [name, t] : tensors) all_metadata[std::string(kChecksumPrefix) + name] = checksum_text(0);
    return 8 + make_header("", tensors, std::move(all_metadata), /*check_size=*/false).size();
}

}  // namespace nn
