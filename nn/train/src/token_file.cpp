#include "nn/train/token_file.h"
#include <nn/files/file_names.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <bit>
#include <csignal>
#include <mutex>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace nn {

using detail::path_str;

namespace {

constexpr int32_t kLlmcMagic = 20240520;
constexpr int32_t kLlmcModelMagic = 20240326;  // llm.c's weights, also named *.bin: refused, never read as ids
constexpr int32_t kLlmcVersion = 1;
constexpr size_t kLlmcHeaderInts = 256;
constexpr size_t kLlmcHeaderBytes = kLlmcHeaderInts * sizeof(int32_t);

static_assert(std::endian::native == std::endian::little, "token files are little-endian; this reads them in place");

std::runtime_error fail(const std::filesystem::path& path, const std::string& what) {
    return std::runtime_error(fmt::format("token file {}: {}", path_str(path), what));
}

// --- a file cut short while mapped -----------------------------------------------------------------
// Reading a mapped page past the end of a file that another process truncated raises SIGBUS, which
// kills the run without a word. The mappings of token files are registered here; the handler maps zero
// pages over the lost part of one (so the read that faulted completes, reading zeros) and marks it cut,
// and the mapping's owner throws at its next check_intact(), naming the file. A fault outside them goes
// to the handler that was there before (ASan's, or the default: the process dies as it would have).

struct GuardedRange {
    std::atomic<uintptr_t> begin{0}, end{0};  // [begin, end) page-aligned; 0, 0 when the slot is free
    std::atomic<bool> cut{false};
    std::atomic_flag taken = ATOMIC_FLAG_INIT;
};
constexpr size_t kGuardedRanges = 64;  // token files mapped at once
GuardedRange g_ranges[kGuardedRanges];
struct sigaction g_previous_sigbus {};
uintptr_t g_page_size = 4096;

void on_sigbus(int signal, siginfo_t* info, void* context) {
    const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
    for (GuardedRange& r : g_ranges) {
        const uintptr_t begin = r.begin.load(std::memory_order_acquire), end = r.end.load(std::memory_order_acquire);
        if (begin == 0 || at < begin || at >= end) continue;
        const uintptr_t page = at & ~(g_page_size - 1);
        if (::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                   0) == MAP_FAILED)
            break;
        r.cut.store(true, std::memory_order_release);
        return;
    }
    if (g_previous_sigbus.sa_flags & SA_SIGINFO) {
        g_previous_sigbus.sa_sigaction(signal, info, context);
    } else if (g_previous_sigbus.sa_handler != SIG_DFL && g_previous_sigbus.sa_handler != SIG_IGN) {
        g_previous_sigbus.sa_handler(signal);
    } else {
        ::signal(SIGBUS, SIG_DFL);  // the faulting read runs again and the default action ends the process
    }
}

void install_sigbus_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        g_page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
        struct sigaction action {};
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGBUS, &action, &g_previous_sigbus);
    });
}

struct Mapping {
    std::filesystem::path path;
    void* address = nullptr;
    size_t length = 0;
    GuardedRange* guard = nullptr;

    void guard_range() {
        install_sigbus_handler();
        for (GuardedRange& r : g_ranges)
            if (!r.taken.test_and_set()) {
                guard = &r;
                r.cut.store(false);
                const auto begin = reinterpret_cast<uintptr_t>(address);
                r.end.store((begin + length + g_page_size - 1) & ~(g_page_size - 1), std::memory_order_release);
                r.begin.store(begin, std::memory_order_release);
                return;
            }
        throw fail(path, fmt::format("cannot be mapped: {} token files are mapped already", kGuardedRanges));
    }
    void check_intact() const {
        if (guard && guard->cut.load(std::memory_order_acquire))
            throw fail(path,
                       "was cut short while it was read (truncated or rewritten by another program?): the ids read "
                       "after that are not the file's; stopped");
    }
    ~Mapping() {
        if (guard) {
            guard->begin.store(0, std::memory_order_release);
            guard->end.store(0, std::memory_order_release);
            guard->taken.clear();
        }
        if (address) munmap(address, length);
    }
};

}  // namespace

bool is_token_file(const std::filesystem::path& path) { return path.extension() == ".bin"; }

TokenIds map_token_file(const std::filesystem::path& path, int64_t vocab_size, TokenFileFormat format) {
    // O_NONBLOCK: a named pipe would wait for a writer, forever; it is refused below
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw fail(path, fmt::format("cannot open it: {}", std::strerror(errno)));
    struct stat st {};
    const bool stat_ok = ::fstat(fd, &st) == 0;
    const int stat_errno = errno;
    if (!stat_ok || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw fail(path, stat_ok ? fmt::format("is {}, not a token file", file_kind(st.st_mode))
                                 : fmt::format("cannot stat it: {}", std::strerror(stat_errno)));
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        throw fail(path, "is empty");
    }
    auto mapping = std::make_shared<Mapping>();
    mapping->path = path;
    mapping->address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (mapping->address == MAP_FAILED) {
        mapping->address = nullptr;
        throw fail(path, fmt::format("cannot map it: {}", std::strerror(map_errno)));
    }
    mapping->length = size;
    mapping->guard_range();
    const auto* bytes = static_cast<const unsigned char*>(mapping->address);

    std::array<int32_t, 3> head{};
    if (size >= sizeof(head)) std::memcpy(head.data(), bytes, sizeof(head));
    if (head[0] == kLlmcModelMagic)
        throw fail(path,
                   fmt::format(
                       "is llm.c's model file (magic {}), not a token file (llm.c's magic {}, or nanoGPT's raw uint16)",
                       kLlmcModelMagic, kLlmcMagic));
    if (format == TokenFileFormat::detect)
        format = head[0] == kLlmcMagic ? TokenFileFormat::llmc : TokenFileFormat::nanogpt;
    uint64_t offset = 0;
    if (format == TokenFileFormat::llmc) {
        if (size < kLlmcHeaderBytes)
            throw fail(path,
                       fmt::format("is {} bytes, shorter than llm.c's header of {} bytes", size, kLlmcHeaderBytes));
        if (head[0] != kLlmcMagic)
            throw fail(path,
                       fmt::format("has magic {}, not llm.c's {} (not an llm.c token file)", head[0], kLlmcMagic));
        if (head[1] != kLlmcVersion)
            throw fail(path,
                       fmt::format("is llm.c token file version {}; this reads version {}", head[1], kLlmcVersion));
        if (head[2] < 0) throw fail(path, fmt::format("its header gives a negative token count {}", head[2]));
        const uint64_t body = size - kLlmcHeaderBytes, expected = 2 * static_cast<uint64_t>(head[2]);
        if (body < expected)
            throw fail(path,
                       fmt::format("is truncated: its header gives {} tokens ({} bytes) but the body has {} bytes",
                                   head[2], expected, body));
        if (body > expected)
            throw fail(path,
                       fmt::format("has {} bytes after the {} tokens its header gives", body - expected, head[2]));
        offset = kLlmcHeaderBytes;
    } else if (size % 2 != 0) {
        throw fail(
            path, fmt::format("has an odd byte count ({}); nanoGPT's token files hold 2 bytes a token (uint16)", size));
    }
    const uint64_t count = (size - offset) / 2;
    if (count == 0) throw fail(path, "holds no tokens");
    ::madvise(mapping->address, size, MADV_SEQUENTIAL);  // the check below reads it once, in order
    const auto* ids = reinterpret_cast<const uint16_t*>(bytes + offset);
    for (uint64_t i = 0; i < count; ++i)
        if (ids[i] >= vocab_size)
            throw fail(path,
                       fmt::format("token {} at position {} is outside the vocabulary [0, {})", ids[i], i, vocab_size));
    mapping->check_intact();
    ::madvise(mapping->address, size, MADV_RANDOM);  // training reads windows at random places
    return TokenIds(MappedU16{std::shared_ptr<const void>(mapping, mapping->address), ids, static_cast<size_t>(count),
                              [mapping] { mapping->check_intact(); }});
}

TokenFileWriter::TokenFileWriter(const std::filesystem::path& path, TokenFileFormat format)
    : path_(path), format_(format == TokenFileFormat::detect ? TokenFileFormat::nanogpt : format) {
    file_ = std::make_unique<AtomicFile>(path, "token file");
    if (format_ == TokenFileFormat::llmc) {
        const std::array<int32_t, kLlmcHeaderInts> placeholder{};  // the real header when finished
        file_->write(placeholder.data(), sizeof(placeholder));
    }
}

void TokenFileWriter::append(std::span<const int64_t> ids) {
    if (!file_) throw fail(path_, "is already finished");
    std::vector<uint16_t> narrow(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] > 0xFFFF)
            throw fail(path_, fmt::format("token {} does not fit in 2 bytes (uint16)", ids[i]));
        narrow[i] = static_cast<uint16_t>(ids[i]);
    }
    file_->write(narrow.data(), narrow.size() * sizeof(uint16_t));
    count_ += ids.size();
}

void TokenFileWriter::finish() {
    if (!file_) throw fail(path_, "is already finished");
    if (format_ == TokenFileFormat::llmc) {
        if (count_ > static_cast<uint64_t>(INT32_MAX))
            throw fail(path_, fmt::format("{} tokens do not fit llm.c's int32 count", count_));
        std::array<int32_t, kLlmcHeaderInts> header{};
        header[0] = kLlmcMagic, header[1] = kLlmcVersion, header[2] = static_cast<int32_t>(count_);
        file_->write_at(0, header.data(), sizeof(header));
    }
    file_->commit();
    file_.reset();
}

}  // namespace nn
