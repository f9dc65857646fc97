// TokenChannel: the hand-over between a generation's decode thread and the JS thread. The decode thread may run
// at most `window` tokens ahead of what JS has acknowledged (a slow consumer slows the model, nothing grows without
// bound), and tokens decoded while JS is busy wait here and cross together as one batch, so a token costs one
// thread hop only when JS is idle anyway.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace mnn_edge {

// Microseconds on CLOCK_MONOTONIC (steady_clock on Linux), the clock of Node's process.hrtime: JS can subtract.
inline double MonotonicUs() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct TokenBatch {
  // One entry per decoded token; "" while a multi-byte character is still incomplete. A last entry may carry
  // the bytes flushed at the end of a generation.
  std::vector<std::string> pieces;
  int tokens = 0;            // decoded tokens among the pieces (a flushed tail is not one)
  double producedUsSum = 0;  // sum of MonotonicUs() at which each token was decoded
  double firstUs = 0;
  double lastUs = 0;
  // Time the decode thread has spent waiting for the consumer's acknowledgements, this generation so far.
  double creditWaitUs = 0;
  bool done = false;
  std::string reason;     // stop | length | aborted (when done without error)
  std::string errorCode;  // set when the generation failed
  std::string errorMessage;
};

class TokenChannel {
 public:
  // holdUs > 0: while JS is busy or not, decoded tokens are held up to that long (and while the window has room)
  // so that JS is woken once per batch, not per token; the first token of a generation is never held, nor one whose
  // next token is not due within the hold.
  explicit TokenChannel(int window, double holdUs = 0) : window_(window < 1 ? 1 : window), holdUs_(holdUs) {}

  // Decode thread: blocks until a token may be decoded. False when cancelled (checked before every token, so a
  // cancel takes effect within the token being decoded).
  bool WaitForCredit(const std::atomic<bool>& cancel) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return cancel.load() || produced_ - acked_ < window_; };
    if (!ready()) {
      double from = MonotonicUs();
      cv_.wait(lock, ready);
      creditWaitUs_ += MonotonicUs() - from;
    }
    return !cancel.load();
  }

  // Decode thread: hands one token's text over. True when JS must be woken (no delivery is pending yet).
  // `last`: no token follows (the length limit), so nothing is gained by holding it.
  bool Put(std::string piece, double producedUs, bool last = false) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.pieces.empty()) pending_.firstUs = producedUs;
    pending_.pieces.push_back(std::move(piece));
    pending_.tokens += 1;
    pending_.producedUsSum += producedUs;
    pending_.lastUs = producedUs;
    // Nothing but the next token (or the end) hands a held one over, so a token is held only while the next is due
    // before the batch's hold runs out, the step just taken being the guess: a step longer than that (a board's
    // 25-100 ms) would make it wait a whole step, the sentence that it ends unspoken for that long.
    const double stepUs = produced_ > 0 ? producedUs - lastPutUs_ : 0;
    lastPutUs_ = producedUs;
    ++produced_;
    if (holdUs_ > 0 && !last && produced_ > 1 && produced_ - acked_ < window_ &&
        producedUs + stepUs - pending_.firstUs < holdUs_) {
      return false;
    }
    return Schedule();
  }

  // Decode thread: the generation has ended; `tail` (may be empty) is delivered without taking credit.
  bool Finish(std::string tail, std::string reason, std::string errorCode = "", std::string errorMessage = "") {
    std::lock_guard<std::mutex> lock(mu_);
    if (!tail.empty()) pending_.pieces.push_back(std::move(tail));
    pending_.done = true;
    pending_.reason = std::move(reason);
    pending_.errorCode = std::move(errorCode);
    pending_.errorMessage = std::move(errorMessage);
    return Schedule();
  }

  // JS thread: everything decoded since the last take.
  TokenBatch Take() {
    std::lock_guard<std::mutex> lock(mu_);
    TokenBatch out;
    std::swap(out, pending_);
    out.creditWaitUs = creditWaitUs_;
    scheduled_ = false;
    return out;
  }

  // JS thread: the consumer took `tokens` more tokens; the decode thread may run that much further.
  void Ack(int tokens) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      acked_ += tokens;
    }
    cv_.notify_one();
  }

  // Any thread: re-checks the cancel flag in a waiting decode thread.
  void Wake() {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_one();
  }

 private:
  bool Schedule() {
    if (scheduled_) return false;
    scheduled_ = true;
    return true;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  const int window_;
  const double holdUs_;
  long long produced_ = 0;
  long long acked_ = 0;
  double lastPutUs_ = 0;
  double creditWaitUs_ = 0;
  TokenBatch pending_;
  bool scheduled_ = false;
};

}  // namespace mnn_edge
