// LlmHandle: one MNN Transformer::Llm (or Omni) driven from JS. generate() prefills and decodes on a thread of
// the generation's own that runs at most `window` tokens ahead of what JS acknowledged (ack()), handing tokens
// over in batches; cancel() takes effect before the next token and JS still decides the pace.
// Its methods are defined by concern: llm.cc (life, load, stats, the one-shot calls), llm_generate.cc (generate and
// the decode thread), llm_contexts.cc (conversation contexts), llm_speech.cc (speech out).
#pragma once

#include <napi.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common.h"
#include "pcm_queue.h"
#include "kv_contexts.h"
#include "prefix_reuse.h"
#include "piece_stream.h"
#include "speech_relay.h"
#include "token_channel.h"
#include "utf8_assembler.h"

namespace MNN {
namespace Transformer {
class Llm;
}
}  // namespace MNN

namespace mnn_edge {

struct PrefillRequest;

// Destroys an Llm inside its own executor's scope (llm.cc says why); every file that drops one goes through it.
void DestroyLlm(MNN::Transformer::Llm* llm);

class LlmHandle : public Napi::ObjectWrap<LlmHandle> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit LlmHandle(const Napi::CallbackInfo& info);
  ~LlmHandle() override;

 private:
  Napi::Value ConfigJson(const Napi::CallbackInfo& info);
  Napi::Value Load(const Napi::CallbackInfo& info);
  void Generate(const Napi::CallbackInfo& info);
  void Ack(const Napi::CallbackInfo& info);
  void Cancel(const Napi::CallbackInfo& info);
  Napi::Value Stats(const Napi::CallbackInfo& info);
  Napi::Value Reset(const Napi::CallbackInfo& info);
  Napi::Value EraseHistory(const Napi::CallbackInfo& info);
  Napi::Value Encode(const Napi::CallbackInfo& info);
  Napi::Value Decode(const Napi::CallbackInfo& info);
  Napi::Value Dispose(const Napi::CallbackInfo& info);
  Napi::Value Speak(const Napi::CallbackInfo& info);
  Napi::Value NextSpeechChunk(const Napi::CallbackInfo& info);
  Napi::Value SetConversations(const Napi::CallbackInfo& info);
  Napi::Value DropSnapshots(const Napi::CallbackInfo& info);

  MNN::Transformer::Llm* Require(Napi::Env env, const char* what);

  // One generate() call: its thread, the channel to JS, and the references that keep both ends alive.
  struct DecodeRun {
    DecodeRun(int window, double holdUs) : channel(window, holdUs) {}
    TokenChannel channel;
    // Logical CPUs the decode thread moves itself to before the prefill; empty: wherever the process may run.
    std::vector<int> cpus;
    Napi::ThreadSafeFunction toJs;
    Napi::ObjectReference owner;
    std::thread thread;
  };
  MNN::Transformer::Llm* Prefill(MNN::Transformer::Llm* llm, const PrefillRequest& req);
  size_t OpenContext();
  bool MakeContext(std::string* error);
  void PrefillIds(MNN::Transformer::Llm* llm, const std::vector<int>& ids, size_t keep, std::ostream* os);
  void KeepHeld(MNN::Transformer::Llm* llm);
  void TrimContexts(bool dropActive);
  int64_t DropContexts(size_t keepCount);
  MNN::Transformer::Llm* Active() { return contexts_.count() == 0 ? llm_ : contexts_.at(active_).llm; }
  void ThinkAloud(MNN::Transformer::Llm* llm, const std::string& text);
  void DecodeLoop(MNN::Transformer::Llm* llm, const PrefillRequest& req, const std::shared_ptr<DecodeRun>& run);
  void Deliver(Napi::Env env, Napi::Function onBatch, DecodeRun& run);

  struct Generation {
    int remaining = 0;
    std::string finishReason;
    int64_t visionUsBefore = 0;
    int64_t audioUsBefore = 0;
    double audioInputSeconds = 0;
    Utf8Assembler utf8;
    // The prompt's tokens (all of them, kept or prefilled) and how many precede its first media token.
    std::vector<int> promptIds;
    size_t matchable = 0;
    ReusePlan reuse;
    // MNN's prefill chunk the kept KV was aligned to (0: none).
    int chunk = 0;
    // Which context ran it and how it was chosen (kv_contexts.h), and what making a new one cost.
    size_t context = 0;
    std::string route = "only";
    double contextCreateUs = 0;
    std::string contextError;
  };

  std::string configPath_;
  MNN::Transformer::Llm* llm_ = nullptr;
  bool loaded_ = false;
  int64_t externalBytes_ = 0;
  BusyFlag busy_;
  std::atomic<bool> cancel_{false};
  Generation gen_;
  std::shared_ptr<PcmQueue> speech_;
  std::shared_ptr<SpeechRelay> relay_ = std::make_shared<SpeechRelay>();
  // A generation ran since the last speak(): an omni talker has hidden states to voice (once: MNN's talker
  // consumes them, and a second Talker::generate on none reads past its list).
  std::atomic<bool> voiceable_{false};
  std::weak_ptr<DecodeRun> run_;
  // The instance's conversation contexts (the first is llm_), each with the tokens whose KV it holds: a new
  // prompt keeps the KV of its common prefix with the context it is routed to.
  KvContexts contexts_;
  // The context of the last generation: stats(), eraseHistory() and speak() act on it.
  size_t active_ = 0;
  // Extra contexts are made from the graph file the config names (create_lora takes it relative to base_dir).
  std::string llmModel_ = "llm.mnn";
  // Lives as long as the Llm, which keeps a pointer to it between generations.
  PieceStream pieces_;
};

}  // namespace mnn_edge
