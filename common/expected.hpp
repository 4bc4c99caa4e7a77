// tally::expected<T>: a value or a tally::error, in the spirit of
// caf::expected but free of CAF so that the lower layers (crdt, clock, fbf,
// ring) stay plain C++ (DESIGN.md, "Layers").
#pragma once

#include <cassert>
#include <optional>
#include <utility>
#include <variant>

#include "common/error.hpp"

namespace tally {

template <class T>
class [[nodiscard]] expected {
public:
  expected(T value) : data_(std::in_place_index<0>, std::move(value)) {}
  expected(error err) : data_(std::in_place_index<1>, std::move(err)) {}

  bool has_value() const noexcept { return data_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(data_); }
  const T& value() const& { assert(has_value()); return std::get<0>(data_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const& { assert(!has_value()); return std::get<1>(data_); }

private:
  std::variant<T, error> data_;
};

/// expected<void>: success, or an error.
template <>
class [[nodiscard]] expected<void> {
public:
  expected() = default;
  expected(error err) : err_(std::move(err)) {}

  bool has_value() const noexcept { return !err_.has_value(); }
  explicit operator bool() const noexcept { return has_value(); }
  const error& err() const& { assert(err_); return *err_; }

private:
  std::optional<error> err_;
};

using status = expected<void>;

} // namespace tally
