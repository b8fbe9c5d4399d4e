#include <nn/files/json_file.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <nn/files/file_names.h>

namespace nn::detail {

namespace {

// Thrown from the parser's callback to stop at the first value past the depth bound.
struct TooDeep {};

std::runtime_error fail(const std::string& source, const std::string& what) {
    return std::runtime_error(fmt::format("{} {}", source, what));
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
        throw fail(source, fmt::format("nests arrays and objects more than {} deep, the limit for this kind of file",
                                       max_depth));
    } catch (const nlohmann::json::exception& e) {
        throw fail(source, fmt::format("is not valid JSON: {}", json_error_text(e)));
    }
}

std::string json_error_text(const nlohmann::json::exception& e) {
    std::string_view what = e.what();
    if (what.starts_with("[json.exception.") && what.find("] ") != std::string_view::npos)
        what.remove_prefix(what.find("] ") + 2);
    constexpr std::string_view kRead = "; last read: '";
    const size_t read = what.find(kRead);
    if (read == std::string_view::npos) return std::string(what.substr(0, 200)) + (what.size() > 200 ? "..." : "");
    const size_t from = read + kRead.size();
    size_t to = what.rfind("'; expected ");
    if (to == std::string_view::npos || to < from) to = what.size() - 1;
    return fmt::format("{}; last read: {}{}", what.substr(0, read), quoted_text(what.substr(from, to - from), 40),
                       what.substr(std::min(to + 1, what.size())));
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view who,
                              std::string_view kind) {
    const std::string file =
        (who.empty() ? std::string() : fmt::format("{}: ", who)) + path_str(path);  // starts each message
    // O_NONBLOCK: opening a named pipe would wait for a writer; it is refused below instead
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open ({})", file, std::strerror(errno)));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        throw std::runtime_error(fmt::format("{}: cannot stat ({})", file, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        throw std::runtime_error(fmt::format("{} is {}, not {}", file, file_kind(st.st_mode), kind));
    const auto size = static_cast<uint64_t>(st.st_size);
    if (size > max_bytes)
        throw std::runtime_error(fmt::format("{} is {} bytes, over the limit of {} bytes ({} MiB) for {}", file, size,
                                             max_bytes, max_bytes >> 20, kind));
    std::string text(size, '\0');
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::read(fd, text.data() + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw std::runtime_error(fmt::format("{}: cannot read ({})", file, std::strerror(errno)));
        if (n == 0) break;  // shortened while read: what reads it names where it ends
        done += static_cast<size_t>(n);
    }
    text.resize(done);
    return text;
}

nlohmann::json read_json_file(const std::filesystem::path& path, JsonLimits limits) {
    return parse_json(read_regular_file(path, limits.max_bytes, "", "a JSON file"), limits.max_depth, path_str(path));
}

}  // namespace nn::detail
