// MNN's omni talker records the thinker's hidden states for speech, and draws the DiT noise, only while a
// waveform callback is installed when a generation runs (Talker::addTalkerEmbeds / generate_init check it). So
// the handle installs this relay once after load and keeps it: it passes PCM to the speak() call that is
// listening, and tells MNN "go on" when none is (MNN's async vocoder also sends an empty last chunk when the
// model is destroyed).
#pragma once

#include <memory>
#include <mutex>

#include "pcm_queue.h"

namespace mnn_edge {

class SpeechRelay {
 public:
  void Attach(std::shared_ptr<PcmQueue> queue) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_ = std::move(queue);
  }

  void Detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.reset();
  }

  // Runs on MNN's synthesis threads. The queue may block (JS not pulling); the relay's lock is not held then.
  bool Forward(const float* data, size_t size, bool last) {
    std::shared_ptr<PcmQueue> queue;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue = queue_;
    }
    if (!queue) return true;
    return queue->Push(data, size, last);
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<PcmQueue> queue_;
};

}  // namespace mnn_edge
