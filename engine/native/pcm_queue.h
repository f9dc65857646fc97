// A bounded hand-over of PCM chunks from MNN's waveform callback (on the synthesis worker thread) to JS pulls.
// When JS does not pull, the producer waits instead of buffering a whole utterance; cancel() releases both
// sides, and the callback then tells MNN to stop.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace mnn_edge {

struct PcmChunk {
  std::vector<float> samples;
  bool last = false;
};

class PcmQueue {
 public:
  explicit PcmQueue(size_t capacity) : capacity_(capacity) {}

  // Blocks while full. Returns false once cancelled (MNN's callback passes that on to stop synthesis) or closed
  // (a chunk MNN delivers after its synthesis call returned, e.g. past its own wait limit, has no reader).
  bool Push(const float* data, size_t size, bool last) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return cancelled_ || closed_ || chunks_.size() < capacity_; });
    if (cancelled_ || closed_) return false;
    chunks_.push_back(PcmChunk{std::vector<float>(data, data + size), last});
    changed_.notify_all();
    return true;
  }

  // Blocks until a chunk arrives or the producer finished; false when there is nothing more.
  bool Pop(PcmChunk* out) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return cancelled_ || closed_ || !chunks_.empty(); });
    if (cancelled_ || chunks_.empty()) return false;
    *out = std::move(chunks_.front());
    chunks_.pop_front();
    changed_.notify_all();
    return true;
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    changed_.notify_all();
  }

  void Cancel() {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    chunks_.clear();
    changed_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<PcmChunk> chunks_;
  bool closed_ = false;
  bool cancelled_ = false;
};

}  // namespace mnn_edge
