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
                                     std::shared_ptr<request_memory_budget> budget)
    : limits_(limits), budget_(std::move(budget)), decoder_(limits.max_frame_size) {
  decoder_.set_admission([this](std::uint32_t length) { return admit(length); });
}

client_connection::~client_connection() {
  if (budget_)
    budget_->release(charged_);
}

// A frame is charged its whole announced size (length bytes, code, body)
// before any byte of its body is buffered: the decision is taken once, and a
// frame that cannot fit is refused before its sender spends time sending it
// (docs/SECURITY.md, "Big frames and the request memory budget").
status client_connection::admit(std::uint32_t length) {
  auto charge = frame_length_size + static_cast<std::size_t>(length);
  if (budget_ && !budget_->try_charge(charge))
    return make_error(
      errc::unavailable,
      "a request of " + std::to_string(charge) + " bytes does not fit in the node's request memory: "
        + std::to_string(budget_->used()) + " of its " + std::to_string(budget_->limit())
        + " bytes (--max-request-memory) are held by requests being received or served; "
          "retry later, or send smaller requests");
  if (budget_)
    charged_ += charge;
  frame_charges_.push_back(budget_ ? charge : 0);
  return {};
}

void client_connection::feed(std::string_view bytes) {
  if (ended_ || peer_closed_ || framing_error_)
    return;
  if (auto st = decoder_.feed(bytes); !st)
    framing_error_ = st.err();
}

void client_connection::peer_closed() {
  peer_closed_ = true;
}

std::uint64_t client_connection::open_slot(std::size_t charge) {
  slots_.push_back(reply_slot{std::nullopt, charge});
  return next_slot_++;
}

std::optional<client_connection::dispatch> client_connection::next() {
  while (!ended_ && in_flight() < limits_.max_in_flight) {
    auto f = decoder_.next();
    // The frame's charge moves to its request until the reply is produced.
    std::size_t charge = 0;
    if (f && !frame_charges_.empty()) {
      charge = frame_charges_.front();
      frame_charges_.pop_front();
    }
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
    f.reset(); // the body's bytes are in the request now
    if (!req && req.err().code() == errc::unavailable) {
      // An unknown code: AntidoteDB closes the connection; the requests
      // before it are still answered.
      ended_ = true;
      if (budget_) {
        budget_->release(charge);
        charged_ -= charge;
      }
      return std::nullopt;
    }
    auto slot = open_slot(charge);
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
  if (s.reply)
    return; // answered twice: keep the first
  s.reply = std::move(bytes);
  if (budget_ && s.charge > 0) {
    budget_->release(s.charge);
    charged_ -= s.charge;
  }
  s.charge = 0;
  ++filled_;
  while (!slots_.empty() && slots_.front().reply) {
    if (out_pos_ >= out_.size()) {
      out_ = std::move(*slots_.front().reply); // a big reply is not copied
      out_pos_ = 0;
    } else {
      out_ += *slots_.front().reply;
    }
    slots_.pop_front();
    --filled_;
    ++next_write_;
  }
}

void client_connection::written(std::size_t n) {
  out_pos_ += n;
  if (out_pos_ >= out_.size()) {
    // A big reply's buffer is freed once written, not kept for the next.
    if (out_.capacity() > (1u << 20))
      std::string{}.swap(out_);
    else
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
