#include "nn/files/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace nn {

std::string sidecar_name(std::string_view filename, std::string_view suffix) {
    constexpr size_t kNameMax = 255;  // NAME_MAX of Linux's file systems
    if (1 + filename.size() + kSidecarSuffix <= kNameMax) return fmt::format(".{}{}", filename, suffix);
    // FNV-1a of the whole name: two long names that share their first 200 bytes keep apart
    uint64_t hash = 0xcbf29ce484222325ull;
    for (char c : filename) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    size_t keep = kNameMax - 1 - 1 - 16 - kSidecarSuffix;  // "." CUT "~" HASH(16) SUFFIX
    while (keep > 0 && (static_cast<unsigned char>(filename[keep]) & 0xC0) == 0x80) --keep;  // not inside a character
    return fmt::format(".{}~{:016x}{}", filename.substr(0, keep), hash, suffix);
}

namespace {

std::filesystem::path directory_of(const std::filesystem::path& target) {
    return target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
}

// Removes the ".NAME.tmp-PID-N" files of processes that no longer run: what a killed save left.
void remove_leftovers(const std::filesystem::path& dir, const std::string& filename) {
    const std::string prefix = sidecar_name(filename, ".tmp-");
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (const dirent* entry = ::readdir(d)) {
        const std::string_view name = entry->d_name;
        if (!name.starts_with(prefix)) continue;
        const std::string_view rest = name.substr(prefix.size());
        const size_t dash = rest.find('-');
        if (dash == 0 || dash == std::string_view::npos) continue;
        pid_t pid = 0;
        bool digits = true;
        for (char c : rest.substr(0, dash)) {
            if (c < '0' || c > '9' || pid > 1'000'000'000) digits = false;
            pid = pid * 10 + (c - '0');
        }
        if (!digits || pid == ::getpid()) continue;
        if (::kill(pid, 0) != 0 && errno == ESRCH) ::unlink((dir / std::string(name)).c_str());
    }
    ::closedir(d);
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& target, std::string who) : target_(target), who_(std::move(who)) {
    const std::string filename = target.filename().string();
    if (filename.empty() || filename == "." || filename == "..") fail("not a file name", 0);
    const std::filesystem::path dir = directory_of(target);
    remove_leftovers(dir, filename);
    static std::atomic<uint64_t> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
        temp_ = dir / sidecar_name(filename, fmt::format(".tmp-{:010}-{:08x}", ::getpid(), counter++ & 0xffffffffu));
        fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ >= 0) return;
        if (errno != EEXIST) break;
    }
    const int error = errno;
    temp_.clear();
    fail(fmt::format("cannot create a temporary file in {}", detail::path_str(dir)), error);
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd_, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("write failed", n < 0 ? errno : ENOSPC);
        p += n;
        size -= static_cast<size_t>(n);
    }
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("write failed", n < 0 ? errno : ENOSPC);
        p += n, offset += static_cast<uint64_t>(n);
        size -= static_cast<size_t>(n);
    }
}

void AtomicFile::commit() {
    if (::fsync(fd_) != 0) fail("fsync failed", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close failed", errno);
    if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot rename the temporary file over it", errno);
    committed_ = true;
    // Make the rename itself durable. Best effort: the new file is already in place.
    const int d = ::open(directory_of(target_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        (void)::fsync(d);
        ::close(d);
    }
}

void AtomicFile::fail(const std::string& what, int error) const {
    throw std::runtime_error(fmt::format("{}: cannot write {}: {}{}", who_, detail::path_str(target_), what,
                                         error ? fmt::format(" ({})", std::strerror(error)) : ""));
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes, std::string who) {
    AtomicFile file(path, std::move(who));
    file.write(bytes.data(), bytes.size());
    file.commit();
}

NewDirectories::NewDirectories(const std::filesystem::path& directory, std::string who) {
    std::vector<std::filesystem::path> missing;  // from `directory` up to the first that exists
    for (std::filesystem::path d = directory; !d.empty(); d = d.parent_path()) {
        struct stat st {};
        if (::lstat(d.c_str(), &st) == 0) break;
        missing.push_back(d);
        if (d == d.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0777) == 0) {
            made_.push_back(*it);
        } else if (errno != EEXIST) {
            const int error = errno;
            remove_made();  // (a constructor that throws runs no destructor)
            throw std::runtime_error(
                fmt::format("{}: cannot make {}: {}", who, detail::path_str(*it), std::strerror(error)));
        }
    }
}

NewDirectories::~NewDirectories() { remove_made(); }

void NewDirectories::remove_made() {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());  // (only while empty)
    made_.clear();
}

}  // namespace nn
