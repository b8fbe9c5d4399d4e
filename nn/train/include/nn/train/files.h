// Writing a file so that a crash, a full disk or a signal never leaves it half-written: the bytes go to
// a temporary file beside the target, which is renamed over the target only when complete and synced.
// Checkpoints are written this way, and the example programs' charts and pages too.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace nn {

// What a file that is not a regular file is, for messages such as "PATH is a named pipe (FIFO)".
const char* file_kind(mode_t mode);

// A temporary file ".NAME.tmp-PID-N" beside the target that becomes the target on commit() and is
// removed otherwise (an exception, a handled signal that unwinds). A run killed outright leaves its
// temporary file behind: the next AtomicFile for the same target removes those of processes that no
// longer run. Errors are std::runtime_error "WHO: cannot write 'PATH': what (strerror)".
class AtomicFile {
public:
    AtomicFile(const std::filesystem::path& target, std::string who);
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;
    ~AtomicFile();

    void write(const void* data, size_t size);
    // Over bytes written before, at `offset` (a header whose count is known only at the end).
    void write_at(uint64_t offset, const void* data, size_t size);
    void commit();  // fsync, rename over the target, fsync the directory

private:
    [[noreturn]] void fail(const std::string& what, int error) const;
    std::filesystem::path target_, temp_;
    std::string who_;
    int fd_ = -1;
    bool committed_ = false;
};

// The whole of `bytes` as the file `path`, through an AtomicFile.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, std::string who);

}  // namespace nn
