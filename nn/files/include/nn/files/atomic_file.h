// Writing a file so that a crash, a full disk or a signal never leaves it half-written: the bytes go to
// a temporary file beside the target, which is renamed over the target only when complete and synced.
// Checkpoints are written this way, and the example programs' charts and pages too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nn/files/file_names.h>

namespace nn {

// The hidden files a program keeps beside an output NAME: its lock ".NAME.lock", the temporary files of
// its saves and the probe of its directory. Their suffixes have a fixed length (kSidecarSuffix bytes at
// most: the temporary file's ".tmp-PID-COUNTER" is zero-padded), so the first save of a name takes the
// same length as the millionth. When "." + NAME + the longest suffix would pass the file system's 255
// bytes, NAME is cut (at a character boundary) and a hash of the whole name appended: any name an output
// may have gets its hidden files.
inline constexpr size_t kSidecarSuffix = 1 + 3 + 1 + 10 + 1 + 8;  // ".tmp-" PID(10) "-" COUNTER(8, hex)
std::string sidecar_name(std::string_view filename, std::string_view suffix);

// A temporary file ".NAME.tmp-PID-N" (sidecar_name) beside the target that becomes the target on commit() and is
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

// The directories an output needs (a folder and its missing parents), made now and removed again, each
// if still empty, when the object ends without keep(): an output that is refused or fails leaves no
// folder behind. Throws std::runtime_error "WHO: cannot make 'DIR': what" (a file in the way, no right).
class NewDirectories {
public:
    NewDirectories(const std::filesystem::path& directory, std::string who);
    NewDirectories(const NewDirectories&) = delete;
    NewDirectories& operator=(const NewDirectories&) = delete;
    ~NewDirectories();
    void keep() { made_.clear(); }

private:
    void remove_made();
    std::vector<std::filesystem::path> made_;  // deepest last
};

// The whole of `bytes` as the file `path`, through an AtomicFile.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, std::string who);

}  // namespace nn
