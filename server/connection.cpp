#include "server/connection.hpp"

#include <chrono>
#include <limits>

namespace tally {

namespace {

std::uint64_t now_us() {
  using namespace std::chrono;
  return static_cast<std::uint64_t>(
    duration_cast<microseconds>(system_clock::now().time_since_epoch()).count());
}

} // namespace

std::string reply_bytes(const response& resp) {
  // Replies have no limit of their own: a read of many keys may exceed what
  // a client may send, and the client asked for it.
  auto bytes = encode_frame(encode_response(resp),
                            std::numeric_limits<std::uint32_t>::max());
  return bytes ? std::move(*bytes) : std::string{};
}

client_connection::client_connection(connection_limits limits,
                                     std::shared_ptr<partial_frame_budget> budget)
    : limits_(limits), budget_(std::move(budget)), decoder_(limits.max_frame_size) {}

client_connection::~client_connection() {
  if (budget_)
    budget_->resize(charged_, 0);
}

void client_connection::feed(std::string_view bytes) {
  if (ended_ || peer_closed_ || framing_error_)
    return;
  // Charged before the decoder may buffer them, settled after: the node
  // never holds more partly received bytes than the budget.
  if (budget_ && !budget_->resize(charged_, charged_ + bytes.size())) {
    framing_error_ = make_error(
      errc::unavailable,
      "the node holds " + std::to_string(budget_->used())
        + " bytes of partly received requests, its limit "
          "(--max-partial-request-bytes "
        + std::to_string(budget_->limit()) + "): send whole requests, or retry later");
    return;
  }
  if (budget_)
    charged_ += bytes.size();
  if (auto st = decoder_.feed(bytes); !st)
    framing_error_ = st.err();
  if (budget_) {
    auto now = decoder_.partial_bytes();
    budget_->resize(charged_, now);
    charged_ = now;
  }
}

void client_connection::peer_closed() {
  peer_closed_ = true;
}

std::uint64_t client_connection::open_slot() {
  slots_.emplace_back();
  return next_slot_++;
}

std::optional<client_connection::dispatch> client_connection::next() {
  while (!ended_ && in_flight() < limits_.max_in_flight) {
    auto f = decoder_.next();
    if (!f) {
      if (framing_error_) {
        // The stream has no frame boundary left to trust: answer, close.
        fill(open_slot(), reply_bytes(error_resp{*framing_error_}));
        ended_ = true;
      } else if (peer_closed_) {
        ended_ = true; // a frame cut short by the close is dropped
      }
      return std::nullopt;
    }
    // Validation at the door: nothing outside the limits is handed on.
    auto req = decode_valid_request(f->code, f->body, limits_.requests, now_us());
    if (!req && req.err().code() == errc::unavailable) {
      // An unknown code: AntidoteDB closes the connection; the requests
      // before it are still answered.
      ended_ = true;
      return std::nullopt;
    }
    auto slot = open_slot();
    if (!req) {
      fill(slot, reply_bytes(error_resp{req.err()}));
      continue;
    }
    floor_.apply(*req);
    return dispatch{slot, std::move(*req)};
  }
  return std::nullopt;
}

void client_connection::complete(std::uint64_t slot, std::string bytes,
                                 const vector_clock& seen) {
  floor_.raise(seen);
  fill(slot, std::move(bytes));
}

void client_connection::fill(std::uint64_t slot, std::string bytes) {
  if (slot < next_write_ || slot - next_write_ >= slots_.size())
    return; // not a slot of this connection: ignore
  auto& s = slots_[slot - next_write_];
  if (s)
    return; // answered twice: keep the first
  s = std::move(bytes);
  ++filled_;
  while (!slots_.empty() && slots_.front()) {
    out_ += *slots_.front();
    slots_.pop_front();
    --filled_;
    ++next_write_;
  }
}

void client_connection::written(std::size_t n) {
  out_pos_ += n;
  if (out_pos_ >= out_.size()) {
    out_.clear();
    out_pos_ = 0;
  } else if (out_pos_ >= (64u << 10) && out_pos_ * 2 >= out_.size()) {
    out_.erase(0, out_pos_);
    out_pos_ = 0;
  }
}

bool client_connection::wants_read() const noexcept {
  return !ended_ && !peer_closed_ && !framing_error_
         && in_flight() < limits_.max_in_flight
         && out_.size() - out_pos_ < limits_.max_pending_output;
}

bool client_connection::done() const noexcept {
  return ended_ && in_flight() == 0 && out_pos_ >= out_.size();
}

} // namespace tally
