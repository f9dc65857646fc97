// LlmHandle: one MNN Transformer::Llm (or Omni) driven from JS. Generation is pull-based: prefill() runs the
// prompt, then each step() decodes exactly one token on a worker thread, so cancel() takes effect within one
// token and JS decides the pace (no unbounded push of tokens).
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <string>

#include "common.h"
#include "pcm_queue.h"
#include "utf8_assembler.h"

namespace MNN {
namespace Transformer {
class Llm;
}
}  // namespace MNN

namespace mnn_edge {

class LlmHandle : public Napi::ObjectWrap<LlmHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit LlmHandle(const Napi::CallbackInfo& info);
  ~LlmHandle() override;

 private:
  Napi::Value ConfigJson(const Napi::CallbackInfo& info);
  Napi::Value Load(const Napi::CallbackInfo& info);
  Napi::Value Prefill(const Napi::CallbackInfo& info);
  Napi::Value Step(const Napi::CallbackInfo& info);
  void Cancel(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Reset(const Napi::CallbackInfo& info);
  Napi::Value EraseHistory(const Napi::CallbackInfo& info);
  Napi::Value Encode(const Napi::CallbackInfo& info);
  Napi::Value Decode(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Speak(const Napi::CallbackInfo& info);
  Napi::Value NextSpeechChunk(const Napi::CallbackInfo& info);

  MNN::Transformer::Llm* Require(Napi::Env env, const char* what);

  struct Generation {
    bool active = false;
    int remaining = 0;
    std::string finishReason;
    int64_t visionUsBefore = 0;
    int64_t audioUsBefore = 0;
    double audioInputSeconds = 0;
    Utf8Assembler utf8;
  };

  std::string configPath_;
  MNN::Transformer::Llm* llm_ = nullptr;
  bool loaded_ = false;
  int64_t externalBytes_ = 0;
  BusyFlag busy_;
  std::atomic<bool> cancel_{false};
  Generation gen_;
  std::shared_ptr<PcmQueue> speech_;
};

}  // namespace mnn_edge
