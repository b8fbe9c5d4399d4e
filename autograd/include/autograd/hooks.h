// Hooks that can be removed: a HookHandle names one registered hook, and a HookList holds the hooks
// of one kind (a tensor's gradient hooks, a module's forward hooks).
//
//     HookHandle h = w.register_hook([](const Tensor& grad) { fmt::print("{}\n", grad); });
//     loss.backward();   // prints w's gradient
//     h.remove();        // idempotent; safe inside the hook itself
//
// The handle does not own the hook: dropping it leaves the hook registered (no RAII), and a handle
// outliving its tensor or module reports active() == false.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace autograd {

namespace detail {
// What a handle points at: whether the hook is still registered.
struct HookState {
    bool active = true;
    virtual ~HookState() = default;
    // Unregisters; a handle on several hooks at once (nn::Module::add_hook) removes each of them.
    virtual void remove() { active = false; }
};
}  // namespace detail

class HookHandle {
public:
    HookHandle() = default;  // refers to no hook; active() is false
    explicit HookHandle(std::weak_ptr<detail::HookState> state) : state_(std::move(state)) {}

    // Unregisters the hook: it fires no more, from the next call on. Calling it again, on a default
    // handle, or after the tensor or module is gone does nothing.
    void remove() {
        if (auto s = state_.lock()) s->remove();
    }
    // Registered, not removed, and its tensor or module still alive.
    bool active() const {
        const auto s = state_.lock();
        return s && s->active;
    }

private:
    std::weak_ptr<detail::HookState> state_;
};

namespace detail {
// One handle on several hooks (nn::Module::add_hook's points, nn::add_hooks' globs): removing it removes
// each. Whoever registers the members keeps the group alive (each member's hook holds it), so the handle
// stays active while any of them is registered.
struct HookGroup : HookState {
    std::vector<HookHandle> members;
    void remove() override {
        active = false;
        for (HookHandle& member : members) member.remove();
    }
};
}  // namespace detail

// The hooks of one kind, run in registration order. A hook may remove itself or any other hook, or
// register new ones, while it runs: run() works on a snapshot, and a hook removed during a run that
// has not fired yet is skipped. Removed hooks are dropped (their closures freed) at the end of a run.
template <typename... Args>
class HookList {
public:
    HookHandle add(std::function<void(Args...)> fn) {
        std::erase_if(hooks_, [](const std::shared_ptr<Hook>& h) { return !h->active; });
        auto hook = std::make_shared<Hook>();
        hook->fn = std::move(fn);
        hooks_.push_back(hook);
        return HookHandle(std::weak_ptr<detail::HookState>(hook));
    }
    bool empty() const { return hooks_.empty(); }
    // Whether a hook is registered and not removed (a removed one may wait in the list until the next run).
    bool active() const {
        for (const auto& hook : hooks_)
            if (hook->active) return true;
        return false;
    }

    void run(Args... args) {
        const std::vector<std::shared_ptr<Hook>> snapshot = hooks_;
        for (const auto& hook : snapshot)
            if (hook->active) hook->fn(args...);
        std::erase_if(hooks_, [](const std::shared_ptr<Hook>& h) { return !h->active; });
    }

private:
    struct Hook : detail::HookState {
        std::function<void(Args...)> fn;
    };
    std::vector<std::shared_ptr<Hook>> hooks_;
};

}  // namespace autograd
