#include "cli.h"

#include <fcntl.h>
#include <poll.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>

#include <fmt/format.h>
#include <nn/files/atomic_file.h>

#ifndef TINYGPT_VERSION
#error "TINYGPT_VERSION must be defined (examples/CMakeLists.txt passes the CMake project's version)"
#endif

namespace cli {

namespace fs = std::filesystem;

// --- values --------------------------------------------------------------------------------------

void Value::fail(std::string_view problem) const { throw UsageError(fmt::format("{} {}", flag_, problem)); }

int64_t Value::integer(int64_t min, int64_t max) const {
    char* end = nullptr;
    errno = 0;  // strtoll clamps a number out of its range and says so only here
    const long long v = std::strtoll(text_.c_str(), &end, 10);
    if (text_.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
        fail(fmt::format("needs a whole number from {} to {}, got '{}'", min, max, text_));
    return v;
}

float Value::number(double min, double max, bool min_open) const {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(text_.c_str(), &end);
    const auto kept = static_cast<float>(v);
    const bool parsed = !text_.empty() && *end == '\0' && std::isfinite(v) && errno != ERANGE;
    if (!parsed || v < min || v > max || (min_open && !(kept > static_cast<float>(min))))
        fail(min_open ? fmt::format("needs a number above {} and at most {}, got '{}'", min, max, text_)
                      : fmt::format("needs a number from {} to {}, got '{}'", min, max, text_));
    return kept;
}

std::string Value::file() const {
    if (text_.empty()) fail("needs a file name, got ''");
    return text_;
}

std::string Value::nonempty() const {
    if (text_.empty()) fail("needs at least one character");
    return text_;
}

std::string Value::choice(const std::vector<std::string>& choices) const {
    if (std::find(choices.begin(), choices.end(), text_) != choices.end()) return text_;
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i)
        list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    fail(fmt::format("must be {}, got '{}'", list, text_));
}

// --- the parser ----------------------------------------------------------------------------------

Parser::Parser(std::string program, std::string synopsis, std::string about)
    : program_(std::move(program)), synopsis_(std::move(synopsis)), about_(std::move(about)) {}

void Parser::section(std::string title) { section_ = std::move(title); }

void Parser::flag(std::string name, std::string help, std::function<void()> on) {
    flags_.push_back({std::move(name), "", std::move(help), section_, std::move(on), nullptr});
}

void Parser::option(std::string name, std::string meta, std::string help, std::function<void(const Value&)> on) {
    flags_.push_back({std::move(name), std::move(meta), std::move(help), section_, nullptr, std::move(on)});
}

void Parser::positional(std::string meta, std::string help, std::function<void(const Value&)> on, bool required) {
    positionals_.push_back({std::move(meta), std::move(help), std::move(on), required});
}

void Parser::argument_hint(std::function<std::string(const std::string&)> hint) { argument_hint_ = std::move(hint); }

namespace {

// The edits (insert, delete, replace, swap two neighbours) that make `a` into `b`: "--modle" is 1 from "--model".
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

}  // namespace

std::string Parser::closest_flag(std::string_view name) const {
    std::vector<std::string_view> known = {"--help", "--version"};
    for (const Flag& f : flags_) known.push_back(f.name);
    std::string_view best;
    size_t best_distance = 0;
    for (const std::string_view flag : known) {
        const size_t distance = edit_distance(name, flag);
        if (best.empty() || distance < best_distance) {
            best = flag;
            best_distance = distance;
        }
    }
    // a typo, not another word: at most 1 edit in a short name, 2 in a longer one
    const size_t letters = name.size() - std::min(name.find_first_not_of('-'), name.size());
    return best_distance <= (letters <= 4 ? 1u : 2u) ? std::string(best) : std::string();
}

const Parser::Flag* Parser::find(std::string_view name) const {
    for (const Flag& f : flags_)
        if (f.name == name) return &f;
    return nullptr;
}

bool Parser::given(std::string_view name) const {
    return std::find(given_.begin(), given_.end(), name) != given_.end();
}

void Parser::positionals(std::string meta, std::string help, std::function<void(const Value&)> on) {
    positionals_.push_back({std::move(meta), std::move(help), std::move(on), true, true});
}

void Parser::positional_or_option(std::string meta, std::string flag, std::string help,
                                  std::function<void(const Value&)> on, bool required) {
    // (no handler of its own: parse() gives its value to the positional's `on`)
    flags_.push_back({std::move(flag), meta, "the same as " + meta, section_, nullptr, nullptr, positionals_.size()});
    positionals_.push_back({std::move(meta), std::move(help), std::move(on), required});
}

void Parser::parse(int argc, const char* const* argv) {
    size_t next_positional = 0;
    bool only_positionals = false;  // after "--"
    // What each positional was given as: its text, and the flag when positional_or_option's flag gave it.
    std::vector<std::optional<Value>> taken(positionals_.size());
    const auto take = [&](size_t p, const Value& value) {
        if (taken[p]) {
            const auto as_given = [&](const Value& v) {
                return v.flag() == positionals_[p].meta ? fmt::format("'{}'", v.text())
                                                        : fmt::format("{} '{}'", v.flag(), v.text());
            };
            throw UsageError(fmt::format("{} is given twice: {} and {}", positionals_[p].meta, as_given(*taken[p]),
                                         as_given(value)));
        }
        taken[p] = value;
        positionals_[p].on(value);
    };
    const auto take_positional = [&](const std::string& text) {
        if (next_positional < positionals_.size()) {
            const size_t p = next_positional++;
            return take(p, Value(positionals_[p].meta, text));
        }
        if (positionals_.empty() || !positionals_.back().repeats) {
            const std::string hint = argument_hint_ ? argument_hint_(text) : std::string();
            throw UsageError(fmt::format("unexpected argument '{}'{}", text, hint.empty() ? "" : " (" + hint + ")"));
        }
        positionals_.back().on(Value(positionals_.back().meta, text));
    };
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (only_positionals || arg == "-" || !arg.starts_with("-")) {
            take_positional(arg);
            continue;
        }
        if (arg == "--") {
            only_positionals = true;
            continue;
        }
        if (arg == "--help" || arg == "-h") throw HelpRequested{};
        if (arg == "--version") throw VersionRequested{};
        const size_t equals = arg.find('=');
        const std::string name = arg.substr(0, equals);
        const Flag* f = find(name);
        if (!f) {
            const std::string closest = closest_flag(name);
            throw UsageError(fmt::format("unknown flag '{}'{}", name,
                                         closest.empty() ? "" : fmt::format(" (did you mean {}?)", closest)));
        }
        given_.push_back(name);
        if (f->on_switch) {
            if (equals != std::string::npos) throw UsageError(fmt::format("{} takes no value, got '{}'", name, arg));
            f->on_switch();
        } else {
            if (equals == std::string::npos && i + 1 >= argc)
                throw UsageError(fmt::format("{} needs a value ({})", name, f->meta));
            const Value value(name, equals != std::string::npos ? arg.substr(equals + 1) : argv[++i]);
            if (f->positional) take(*f->positional, value);
            else f->on_value(value);
        }
    }
    for (size_t p = 0; p < positionals_.size(); ++p)
        if (positionals_[p].required && !taken[p])
            throw UsageError(fmt::format("{} is missing: {}", positionals_[p].meta, positionals_[p].help));
}

std::string Parser::help() const {
    std::string synopsis_line = "usage: " + program_ + (synopsis_.empty() ? "" : " " + synopsis_);
    std::string text = synopsis_line + "\n" + about_ + "\n";
    constexpr size_t kColumn = 23;  // where the help text starts
    const auto line = [&](const std::string& left, const std::string& help) {
        std::string out = "  ";
        out += left;
        out += out.size() + 1 < kColumn ? std::string(kColumn - out.size(), ' ') : "\n" + std::string(kColumn, ' ');
        for (char c : help) out += c == '\n' ? "\n" + std::string(kColumn, ' ') : std::string(1, c);
        return out + "\n";
    };
    for (const Positional& p : positionals_) text += line(p.meta, p.help);
    std::string section = "\x01";  // none yet
    for (const Flag& f : flags_) {
        if (f.section != section) {
            section = f.section;
            if (!section.empty()) text += "\n" + section + "\n";
        }
        text += line(f.name + (f.meta.empty() ? "" : " " + f.meta), f.help);
    }
    text += '\n';
    text += line("--help", "this text, then exit");
    text += line("--version", "the version, then exit");
    return text;
}

void checkpoint_argument(Parser& p, std::optional<Input>& checkpoint, std::string help, bool required) {
    p.positional_or_option(
        "CKPT", "--checkpoint", std::move(help),
        [&checkpoint](const Value& v) {
            checkpoint = Input{v.flag() == "CKPT" ? "" : v.flag(), v.file()};
        },
        required);
}

void checkpoint_argument(Parser& p, std::optional<Input>& checkpoint, std::optional<std::string>& tokenizer,
                         std::optional<int64_t>& n_head, std::string help, bool required) {
    checkpoint_argument(p, checkpoint, std::move(help), required);
    p.option("--tokenizer", "DIR",
             "GPT-2's BPE files (vocab.json + merges.txt, or encoder.json + vocab.bpe) for\n"
             "GPT-2 weights without them beside (with neither, token ids only); a\n"
             "checkpoint's own must be the same. For llama2.c's model .bin: a\n"
             "tokenizer.bin FILE (else the one beside it, else token ids only). For a\n"
             "Hugging Face Llama folder: a tokenizer.json or tokenizer.bin FILE, or a DIR\n"
             "holding one (else the folder's tokenizer.json, else token ids only)",
             [&tokenizer](const Value& v) { tokenizer = v.nonempty(); });
    p.option("--n-head", "N",
             "the head count of Hugging Face's GPT-2 weights without config.json\n"
             "beside them (needed unless n_embd is a published size); a checkpoint's\n"
             "own must be the same",
             [&n_head](const Value& v) { n_head = v.integer(1, 1 << 20); });
}

std::string version_line(std::string_view program) { return fmt::format("{} (tinygpt) {}", program, TINYGPT_VERSION); }

// --- running a program ---------------------------------------------------------------------------

namespace {

// "program: what", once: a message that starts with the program's name already keeps it as it is. One
// error is one line: a newline or another control character in it (from a file name, say) is escaped.
void print_error(std::string_view program, std::string_view what) {
    const std::string prefix = std::string(program) + ": ";
    const std::string line = (what.starts_with(prefix) ? std::string() : prefix) + nn::escape_controls(what) + '\n';
    (void)!std::fwrite(line.data(), 1, line.size(), stderr);
}

// A program started with standard input, output or error closed (`train >&-`) would hand that number to
// the first file it opens, and then print its results, or its errors, into a lock file or a checkpoint.
// Each closed one is opened on /dev/null first; with no /dev/null the program stops.
void open_standard_streams() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (null != fd) std::_Exit(127);  // the lowest free number is fd: anything else leaves it closed
    }
}

// stdout is buffered: a full disk or a closed pipe shows only when it is flushed.
bool stdout_written() { return std::fflush(stdout) == 0 && !std::ferror(stdout); }

// Standard output is a pipe whose reader has gone (`program | head` after head exited): Linux reports
// POLLERR to the writer then. What failed to be written was not wanted; a program killed by SIGPIPE
// would have stopped without a word, with status 128 + SIGPIPE, and so does this one.
constexpr int kReaderGoneStatus = 128 + SIGPIPE;
bool stdout_reader_gone() {
    struct stat st {};
    if (::fstat(STDOUT_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
    pollfd p{STDOUT_FILENO, POLLOUT, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & POLLERR) != 0;
}

}  // namespace

int run(Parser& parser, int argc, char** argv, const std::function<int()>& program_body) {
    open_standard_streams();
    ::signal(SIGPIPE, SIG_IGN);  // a closed pipe is a failed write, reported, never a silent death
    const std::string& program = parser.program();
    try {
        parser.parse(argc, argv);
    } catch (const HelpRequested&) {
        fmt::print("{}", parser.help());
        return stdout_written() ? 0 : 1;
    } catch (const VersionRequested&) {
        fmt::print("{}\n", version_line(program));
        return stdout_written() ? 0 : 1;
    } catch (const UsageError& e) {
        print_error(program, fmt::format("{}; see --help", e.what()));
        return 2;
    }
    int status = 1;
    try {
        status = program_body();
    } catch (const UsageError& e) {  // the checks on output files, before any work
        print_error(program, fmt::format("{}; see --help", e.what()));
        return 2;
    } catch (const std::bad_alloc&) {
        print_error(program, "out of memory (std::bad_alloc)");
        return 1;
    } catch (const std::exception& e) {
        if (std::string_view(e.what()).find(std::strerror(EPIPE)) != std::string_view::npos && stdout_reader_gone())
            return kReaderGoneStatus;
        print_error(program, e.what());
        return 1;
    }
    if (!stdout_written()) {
        const int error = errno;
        if (stdout_reader_gone()) return kReaderGoneStatus;
        print_error(program, fmt::format("cannot write to standard output ({})", std::strerror(error)));
        return status == 0 ? 1 : status;
    }
    return status;
}

// --- output files --------------------------------------------------------------------------------

// The same file: by device and inode when both exist, else by the path with symbolic links resolved.
bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    std::error_code ea, eb;
    const fs::path ca = fs::weakly_canonical(fs::absolute(a), ea), cb = fs::weakly_canonical(fs::absolute(b), eb);
    return !ea && !eb && ca == cb;
}

namespace {

std::string named(const std::string& flag, const std::string& path) {
    const std::string shown = nn::printable_name(path);
    return flag.empty() ? shown : flag + " " + shown;
}

fs::path directory_of(const std::string& path) {
    const fs::path p(path);
    return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

// A save renames a new file over an existing output; refuse now what would make that rename fail
// after hours of training: in a directory with the sticky bit (/tmp, a shared 1777 folder) only the
// file's owner, the directory's owner or root may replace it; an immutable or append-only file
// (chattr +i, +a) cannot be replaced by anyone.
void check_replaceable(const std::string& what, const std::string& path, const struct stat& file, const fs::path& dir,
                       const struct stat& dir_st) {
    const uid_t me = ::geteuid();
    if ((dir_st.st_mode & S_ISVTX) && me != 0 && file.st_uid != me && dir_st.st_uid != me)
        throw std::runtime_error(
            fmt::format("{} belongs to another user (uid {}) in {}, a directory with the sticky bit: "
                        "a save could not replace it; choose another file",
                        what, file.st_uid, nn::printable_name(dir.string())));
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return;  // unreadable: the flags cannot be asked, the probe below still tests the directory
    int flags = 0;
    const bool asked = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    ::close(fd);
    if (asked && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)))
        throw std::runtime_error(
            fmt::format("{} is {}: a save could not replace it", what,
                        (flags & FS_IMMUTABLE_FL) ? "immutable (chattr +i)" : "append-only (chattr +a)"));
}

}  // namespace

void check_outputs(const std::vector<Input>& inputs, const std::vector<Output>& outputs, bool force) {
    for (size_t i = 0; i < outputs.size(); ++i) {
        const Output& out = outputs[i];
        const std::string what = named(out.flag, out.path);
        bool replaces_own_input = false;
        for (const Input& in : inputs) {
            if (!same_file(out.path, in.path)) continue;
            if (out.may_replace && *out.may_replace == in.flag) {
                replaces_own_input = true;
                continue;
            }
            throw UsageError(fmt::format("{} is the same file as {}: writing it would destroy the input", what,
                                         named(in.flag, in.path)));
        }
        for (size_t j = 0; j < i; ++j)
            if (same_file(out.path, outputs[j].path))
                throw UsageError(fmt::format("{} is also {}: two outputs cannot share a file", what,
                                             named(outputs[j].flag, outputs[j].path)));
        // The directory first: "a_file/x" is about a_file, not x.
        const fs::path dir = directory_of(out.path);
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0)
            throw std::runtime_error(
                fmt::format("{}: cannot use {} as its directory: {}", what, dir.string(), std::strerror(errno)));
        if (!S_ISDIR(st.st_mode))
            throw std::runtime_error(fmt::format("{}: {} is not a directory", what, dir.string()));
        const struct stat dir_st = st;
        if (::lstat(out.path.c_str(), &st) == 0) {
            if (S_ISLNK(st.st_mode))
                throw UsageError(fmt::format("{} is a symbolic link; name the file it points to", what));
            if (!S_ISREG(st.st_mode))
                throw UsageError(fmt::format("{} is {}, not a file to write", what, nn::file_kind(st.st_mode)));
            if (!force && !out.continues && !replaces_own_input)
                throw UsageError(fmt::format("{} exists; add --force to replace it", what));
            check_replaceable(what, out.path, st, dir, dir_st);
        } else if (errno != ENOENT) {
            throw std::runtime_error(fmt::format("{}: cannot use it: {}", what, std::strerror(errno)));
        }
        // Writable: the real write creates a temporary file beside the target, with a name of the same
        // length as the probe's (nn::sidecar_name), and renames it.
        const fs::path probe = dir / nn::sidecar_name(fs::path(out.path).filename().string(),
                                                      fmt::format(".prb-{:010}-{:08x}", ::getpid(), 0));
        const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            throw std::runtime_error(fmt::format("{}: cannot create a file in {}: {}", what,
                                                 nn::printable_name(dir.string()), std::strerror(errno)));
        ::close(fd);
        ::unlink(probe.c_str());
    }
}

OutputLocks::OutputLocks(const std::vector<Output>& outputs) {
    for (const Output& out : outputs) {
        const std::string what = named(out.flag, out.path);
        const fs::path lock =
            directory_of(out.path) / nn::sidecar_name(fs::path(out.path).filename().string(), ".lock");
        const std::string lock_shown = nn::printable_name(lock.string());
        for (int attempt = 0;; ++attempt) {
            // O_NOFOLLOW: a symbolic link planted as the lock file (in a shared directory, say) must not
            // make this run open, lock and write whatever it points to.
            const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
            if (fd < 0) {
                const int error = errno;
                throw std::runtime_error(error == ELOOP
                                             ? fmt::format("{}: its lock file {} is a symbolic link; remove it if no "
                                                           "run of yours made it",
                                                           what, lock_shown)
                                             : fmt::format("{}: cannot create its lock file {}: {}", what, lock_shown,
                                                           std::strerror(error)));
            }
            // Only a regular file of this user's, with no other name, is written: a hard link to another
            // file, a FIFO or a device planted there is refused before it is touched.
            struct stat held {};
            if (::fstat(fd, &held) != 0 || !S_ISREG(held.st_mode) || held.st_nlink != 1 || held.st_uid != ::geteuid()) {
                const std::string problem = !S_ISREG(held.st_mode) ? nn::file_kind(held.st_mode)
                                            : held.st_nlink != 1
                                                ? fmt::format("a file with {} names (hard links)", held.st_nlink)
                                                : fmt::format("another user's file (uid {})", held.st_uid);
                ::close(fd);
                throw std::runtime_error(
                    fmt::format("{}: its lock file {} is {}, not one this run can own; remove it if no "
                                "run is writing {}",
                                what, lock_shown, problem, nn::printable_name(out.path)));
            }
            if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
                char pid[32] = {};
                const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
                ::close(fd);
                std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : std::string();
                while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
                if (holder.find_first_not_of("0123456789") != std::string::npos) holder.clear();
                throw std::runtime_error(fmt::format(
                    "{} is being written by another run (PID {}); wait for it to end or choose another file", what,
                    holder.empty() ? "unknown" : holder));
            }
            // The holder before us may have removed the lock file after we opened it: lock the file
            // that is there now, or we would share an orphan with the next run. Written (truncated,
            // then our PID) only now that it is held.
            struct stat there {};
            if (::lstat(lock.c_str(), &there) == 0 && held.st_ino == there.st_ino && held.st_dev == there.st_dev) {
                const std::string pid = fmt::format("{}\n", ::getpid());
                if (::ftruncate(fd, 0) != 0 ||
                    ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
                    // The PID is only for the other run's message; the lock holds without it.
                }
                held_.push_back({fd, lock.string()});
                break;
            }
            ::close(fd);
            if (attempt == 100)
                throw std::runtime_error(fmt::format("{}: its lock file {} keeps changing", what, lock_shown));
        }
    }
}

OutputLocks::~OutputLocks() {
    for (const Held& h : held_) {
        ::unlink(h.path.c_str());  // while still locked: a run that opened it retries on the new file
        ::close(h.fd);
    }
}

}  // namespace cli
