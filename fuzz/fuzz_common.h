// Shared by the fuzz targets. Each target's LLVMFuzzerTestOneInput treats the documented errors for bad
// input (std::invalid_argument, std::runtime_error) as the right answer and lets anything else escape:
// libFuzzer (or replay_main.cpp) then reports it, as it reports a crash, a sanitizer error or a hang.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

inline std::string_view bytes(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// A file of this process's own that holds `contents`, for the loaders that read paths.
inline std::filesystem::path scratch_file(std::string_view contents, const char* suffix) {
    static const std::filesystem::path dir = [] {
        std::error_code ec;
        std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
        if (ec) tmp = "/tmp";
        return tmp;
    }();
    const std::filesystem::path path = dir / ("tinygpt-fuzz-" + std::to_string(::getpid()) + suffix);
    struct Remover {  // the last input's file goes when the process exits normally
        std::filesystem::path path;
        ~Remover() {
            std::error_code ec;
            std::filesystem::remove(path, ec);
        }
    };
    static Remover remover;
    remover.path = path;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
        std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
    return path;
}

// A finding that is not a crash: a broken promise of the API under test.
// A folder made once per process by `make` (given the folder's path), removed at exit: a model's files the
// inputs are read beside.
template <class Make>
const std::filesystem::path& process_folder(std::string_view tag, Make make) {
    struct Folder {
        std::filesystem::path path;
        ~Folder() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static const Folder folder{std::filesystem::temp_directory_path() /
                               ("tinygpt-fuzz-" + std::to_string(::getpid()) + "-" + std::string(tag))};
    static const bool made = (make(folder.path), true);
    (void)made;
    return folder.path;
}

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz: %s\n", what);
    std::abort();
}

}  // namespace fuzz
