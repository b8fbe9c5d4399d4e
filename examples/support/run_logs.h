// The CSV logs of a training run (train --csv, --grad-csv): written through a Writer, which closes its
// file whatever ends the run. When the run is resumed, a log is continued only if it is one (its first
// line is the log's header), and it is cut back to the checkpoint's step, so that the log of a run
// killed and resumed has the rows a straight run's has, each once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace run_logs {

struct Log {
    std::string flag, path;   // "--csv", the file
    std::string_view header;  // its first line, with the newline
};

// Before any work: true when the resumed run continues `log`, an existing file whose first line is
// `log.header` exactly; false when there is no file (or, with `force`, one that is not such a log: the
// run then starts the log afresh). Anything else (a checkpoint, a README, another program's CSV, an
// empty file) is a cli::UsageError naming the flag and the file; a log with a row that does not start
// with a step, a std::runtime_error naming the line.
bool continues(const Log& log, bool force);

// Removes the rows of `log` whose step (the first field) is past `step`, the resumed checkpoint's: rows
// a run logged after its last checkpoint and before it was killed. A last line without its newline (a
// write cut short) goes too. The file is rewritten atomically, and only if something goes; returns
// whether it was. std::runtime_error naming the file and line for a row that does not start with a step.
bool drop_rows_after(const Log& log, int64_t step);

// A log open for the run's rows, closed when destroyed. A new log is created (or replaced) with its
// header; a `continued` one (continues() said so) first loses its rows past `through`
// (drop_rows_after), then is appended to. Each failure is a std::runtime_error naming the flag and file.
class Writer {
public:
    Writer(const Log& log, bool continued, int64_t through);
    // Writes `rows` and hands them to the kernel (flush(false)).
    void append(std::string_view rows);
    // "FLAG FILE: cannot write (why)" when the rows written so far did not reach the kernel or, with
    // `durable`, the disk (fsync: before the checkpoint of their step is saved).
    void flush(bool durable);

private:
    struct Close {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::string flag_, path_;
    std::unique_ptr<std::FILE, Close> file_;
};

}  // namespace run_logs
