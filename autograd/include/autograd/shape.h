// autograd::Shape: a tensor's dimensions, held inline (at most kMaxDims of them), so that making a
// tensor never asks the heap for its shape: an op in no-grad mode (cached decoding) allocates nothing
// once the buffer cache is warm. It reads like the std::vector<int64_t> it replaces: braces, size(),
// operator[], begin()/end(), push_back, insert, erase, ==; and converts to std::span<const int64_t>.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace autograd {

class Shape {
public:
    static constexpr size_t kMaxDims = 8;  // more than any model here needs (they use up to 4)
    using value_type = int64_t;
    using size_type = size_t;
    using difference_type = std::ptrdiff_t;
    using reference = int64_t&;
    using const_reference = const int64_t&;
    using pointer = int64_t*;
    using const_pointer = const int64_t*;
    using iterator = int64_t*;
    using const_iterator = const int64_t*;

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
    template <typename It>
    requires std::input_iterator<It> Shape(It first, It last) { assign(first, last); }
    Shape(size_t n, int64_t value) { assign(n, value); }
    Shape(std::span<const int64_t> dims) { assign(dims.begin(), dims.end()); }  // NOLINT(google-explicit-constructor)
    Shape(const std::vector<int64_t>& dims) {
        assign(dims.begin(), dims.end());
    }                                                                       // NOLINT(google-explicit-constructor)
    operator std::vector<int64_t>() const { return {begin(), end()}; }      // NOLINT(google-explicit-constructor)
    operator std::span<const int64_t>() const { return {data(), size()}; }  // NOLINT(google-explicit-constructor)

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    static constexpr size_t max_size() { return kMaxDims; }
    int64_t* data() { return dims_; }
    const int64_t* data() const { return dims_; }
    int64_t* begin() { return dims_; }
    int64_t* end() { return dims_ + size_; }
    const int64_t* begin() const { return dims_; }
    const int64_t* end() const { return dims_ + size_; }
    auto rbegin() const { return std::reverse_iterator<const int64_t*>(end()); }
    auto rend() const { return std::reverse_iterator<const int64_t*>(begin()); }
    int64_t& operator[](size_t i) { return dims_[i]; }
    int64_t operator[](size_t i) const { return dims_[i]; }
    int64_t& front() { return dims_[0]; }
    int64_t front() const { return dims_[0]; }
    int64_t& back() { return dims_[size_ - 1]; }
    int64_t back() const { return dims_[size_ - 1]; }

    void clear() { size_ = 0; }
    void push_back(int64_t d) {
        grow_to(size_ + 1);
        dims_[size_++] = d;
    }
    void pop_back() { --size_; }
    void resize(size_t n, int64_t value = 0) {
        grow_to(n);
        for (size_t i = size_; i < n; ++i) dims_[i] = value;
        size_ = n;
    }
    void assign(size_t n, int64_t value) {
        size_ = 0;
        resize(n, value);
    }
    template <typename It>
    void assign(It first, It last) {
        size_ = 0;
        for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
    }
    int64_t* insert(const int64_t* at, int64_t d) {
        const auto i = static_cast<size_t>(at - dims_);
        grow_to(size_ + 1);
        std::copy_backward(dims_ + i, dims_ + size_, dims_ + size_ + 1);
        dims_[i] = d;
        ++size_;
        return dims_ + i;
    }
    int64_t* erase(const int64_t* at) {
        const auto i = static_cast<size_t>(at - dims_);
        std::copy(dims_ + i + 1, dims_ + size_, dims_ + i);
        --size_;
        return dims_ + i;
    }

    friend bool operator==(const Shape& a, const Shape& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
    friend bool operator<(const Shape& a, const Shape& b) {
        return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    void grow_to(size_t n) const {
        if (n > kMaxDims)
            throw std::invalid_argument("autograd: a tensor has at most " + std::to_string(kMaxDims) +
                                        " dimensions, asked for " + std::to_string(n));
    }
    int64_t dims_[kMaxDims] = {};  // the first size_ are the dimensions
    size_t size_ = 0;
};

}  // namespace autograd
