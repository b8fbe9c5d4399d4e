// Leaks on purpose: the asan suite's lsan_self_check runs it and requires LeakSanitizer's report, so a
// machine where LeakSanitizer cannot run (it needs ptrace) fails loudly instead of passing every leak check.
#include <cstdio>
#include <cstdlib>

int main() {
    void* volatile lost = std::malloc(4242);
    std::printf("allocated %p and forgot it\n", lost);
    lost = nullptr;
    return 0;
}
