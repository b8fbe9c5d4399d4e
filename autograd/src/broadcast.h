// NumPy broadcasting for binary ops: the result shape, and a walk over it that hands each element's
// offsets in both inputs. Backward uses the same walk with `+=`, which sums a broadcast input's gradient
// back to its own shape.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/check.h"
#include "autograd/threads.h"

namespace autograd::detail {

struct Broadcast {
    Shape out;
    Shape a_stride, b_stride;  // general kind only: per result dim, 0 where stretched
    enum class Kind { same, b_scalar, a_scalar, general } kind = Kind::general;

    // The walk of for_each for an f that writes only at one place per element: the result (i) or an
    // operand (ia or ib). Where that place is distinct for every element (the result, or an operand of
    // the result's shape) the walk is split across threads; a stretched operand collects several
    // elements into one place, a sum that stays on one thread in the same order.
    enum class Writes { result, a, b };
    template <typename F>
    void for_each_writing(Writes target, F&& f) const {
        const bool distinct = target == Writes::result || kind == Kind::same ||
                              (target == Writes::a && kind == Kind::b_scalar) ||
                              (target == Writes::b && kind == Kind::a_scalar);
        if (!distinct || kind == Kind::general) return for_each(f);
        int64_t n = 1;
        for (int64_t d : out) n *= d;
        const Kind k = kind;
        parallel_for(n, kMinElementsPerThread, [&](int64_t begin, int64_t end) {
            switch (k) {
                case Kind::same:
                    for (int64_t i = begin; i < end; ++i) f(i, i, i);
                    return;
                case Kind::b_scalar:
                    for (int64_t i = begin; i < end; ++i) f(i, i, 0);
                    return;
                default:
                    for (int64_t i = begin; i < end; ++i) f(i, 0, i);
                    return;
            }
        });
    }

    // f(i, ia, ib): result element i reads a[ia] and b[ib].
    template <typename F>
    void for_each(F&& f) const {
        int64_t n = 1;
        for (int64_t d : out) n *= d;
        switch (kind) {
            case Kind::same:
                for (int64_t i = 0; i < n; ++i) f(i, i, i);
                return;
            case Kind::b_scalar:
                for (int64_t i = 0; i < n; ++i) f(i, i, 0);
                return;
            case Kind::a_scalar:
                for (int64_t i = 0; i < n; ++i) f(i, 0, i);
                return;
            case Kind::general:
                break;
        }
        if (n == 0 || out.empty()) return;
        const size_t rank = out.size();
        const int64_t inner = out[rank - 1], sa = a_stride[rank - 1], sb = b_stride[rank - 1];
        int64_t index[Shape::kMaxDims] = {};  // the odometer, on the stack (no allocation per walk)
        int64_t ia = 0, ib = 0;
        for (int64_t i = 0; i < n; i += inner) {
            for (int64_t k = 0; k < inner; ++k) f(i + k, ia + k * sa, ib + k * sb);
            // advance the odometer over all dims but the last
            for (size_t d = rank - 1; d-- > 0;) {
                ia += a_stride[d];
                ib += b_stride[d];
                if (++index[d] < out[d]) break;
                ia -= a_stride[d] * out[d];
                ib -= b_stride[d] * out[d];
                index[d] = 0;
            }
        }
    }
};

inline Broadcast broadcast(const Shape& a, const Shape& b, const char* op) {
    Broadcast bc;
    if (a == b) {  // the common case, and the cheap one: no strides to keep
        bc.out = a;
        bc.kind = Broadcast::Kind::same;
        return bc;
    }
    const size_t rank = std::max(a.size(), b.size());
    bc.out.assign(rank, 1);
    bc.a_stride.assign(rank, 0);
    bc.b_stride.assign(rank, 0);
    int64_t stride_a = 1, stride_b = 1;
    for (size_t k = 0; k < rank; ++k) {
        const size_t d = rank - 1 - k;
        const int64_t da = k < a.size() ? a[a.size() - 1 - k] : 1;
        const int64_t db = k < b.size() ? b[b.size() - 1 - k] : 1;
        check(da == db || da == 1 || db == 1, "{}: shapes {} and {} cannot be broadcast together (dim {}: {} vs {})",
              op, shape_str(a), shape_str(b), d, da, db);
        bc.out[d] = da == 1 ? db : da;
        bc.a_stride[d] = da == 1 ? 0 : stride_a;
        bc.b_stride[d] = db == 1 ? 0 : stride_b;
        stride_a *= da;
        stride_b *= db;
    }
    if (stride_b == 1 && a.size() == rank && a == bc.out) bc.kind = Broadcast::Kind::b_scalar;
    else if (stride_a == 1 && b.size() == rank && b == bc.out) bc.kind = Broadcast::Kind::a_scalar;
    if (bc.kind != Broadcast::Kind::general) bc.a_stride.clear(), bc.b_stride.clear();  // not read
    return bc;
}

}  // namespace autograd::detail
