#include "json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <nn/files/file_names.h>

namespace nn::detail {

namespace {

// Thrown from the parser's callback to stop at the first value past the depth bound.
struct TooDeep {};

std::runtime_error fail(const std::string& source, const std::string& what) {
    return std::runtime_error(fmt::format("{}: {}", source, what));
}

}  // namespace

nlohmann::json parse_json(std::string_view text, int max_depth, const std::string& source) {
    // nlohmann's callback sees each value's depth as it starts; values past the bound are never built.
    const auto bounded = [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        using E = nlohmann::json::parse_event_t;
        if ((event == E::object_start || event == E::array_start) && depth >= max_depth) throw TooDeep{};
        return true;
    };
    try {
        return nlohmann::json::parse(text.begin(), text.end(), bounded);
    } catch (const TooDeep&) {
        throw fail(source, fmt::format("nests arrays and objects more than {} deep, the limit for this kind of file", max_depth));
    } catch (const nlohmann::json::exception& e) {
        // (the parser's message quotes what it last read: raw bytes of any length)
        std::string_view what = e.what();
        if (what.starts_with("[json.exception.")) what.remove_prefix(what.find("] ") + 2);
        throw fail(source, fmt::format("is not valid JSON: {}", escaped_excerpt(what, 160)));
    }
}

nlohmann::json read_json_file(const std::filesystem::path& path, JsonLimits limits) {
    const std::string source = path_str(path);
    // O_NONBLOCK: opening a named pipe would wait for a writer; it is refused below instead
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw fail(source, fmt::format("cannot open ({})", std::strerror(errno)));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw fail(source, fmt::format("cannot stat ({})", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw fail(source, fmt::format("is {}, not a JSON file", file_kind(st.st_mode)));
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > limits.max_bytes)
        throw fail(source, fmt::format("is {} bytes, over the limit of {} for this kind of file", size, limits.max_bytes));
    std::string text(size, '\0');
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::read(fd, text.data() + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw fail(source, fmt::format("cannot read ({})", std::strerror(errno)));
        if (n == 0) break;  // shortened while read: the parser names where it ends
        done += static_cast<size_t>(n);
    }
    text.resize(done);
    return parse_json(text, limits.max_depth, source);
}

}  // namespace nn::detail
