// Test helper: runs a command and writes its peak resident set size (getrusage's ru_maxrss of that one
// child, in KiB) to OUT_FILE, so a test can hold a program's memory to a bound without timing anything.
//
//   peak_rss OUT_FILE COMMAND [ARG...]     exit status: the command's (or 127 when it cannot run)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: peak_rss OUT_FILE COMMAND [ARG...]\n");
        return 2;
    }
    const pid_t child = fork();
    if (child < 0) return std::perror("peak_rss: fork"), 127;
    if (child == 0) {
        execv(argv[2], argv + 2);
        std::perror("peak_rss: exec");
        _exit(127);
    }
    int status = 0;
    rusage usage{};
    if (wait4(child, &status, 0, &usage) != child) return std::perror("peak_rss: wait4"), 127;
    std::FILE* out = std::fopen(argv[1], "w");
    if (!out) return std::perror("peak_rss: OUT_FILE"), 127;
    std::fprintf(out, "%ld\n", usage.ru_maxrss);
    std::fclose(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
