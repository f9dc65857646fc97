// LlmHandle's life and its one-shot calls: construction (the config only), load, stats, reset, eraseHistory,
// encode, decode, dispose. A generation (generate, ack, cancel, the decode thread) is llm_generate.cc's, the
// conversation contexts llm_contexts.cc's, speech out llm_speech.cc's; the request generate() reads is
// llm_request.cc's.
#include "llm.h"

#include <MNN/expr/ExecutorScope.hpp>
#include <llm/llm.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "chosen_backend.h"

namespace mnn_edge {

using MNN::Transformer::Llm;
// MNN's Llm methods each run inside an ExecutorScope of the instance's executor; its destructor takes none, so
// the variables it releases would see whatever executor is current on the calling thread (the process-wide one
// on a worker thread), which other models in the process may be using at that moment. Destroy inside the
// instance's own scope, holding the executor past the delete (the destructor drops the instance's reference).
void DestroyLlm(Llm* llm) {
  if (llm == nullptr) return;
  std::shared_ptr<MNN::Express::Executor> executor = llm->getExecutor();
  if (executor == nullptr) {
    Llm::destroy(llm);
    return;
  }
  MNN::Express::ExecutorScope scope(executor);
  Llm::destroy(llm);
}

namespace {
struct LoadTiming {
  double readUs = 0;
  double readBytes = 0;
  double loadUs = 0;
  int64_t grownBytes = 0;
};

// Reads the files once (into a reused buffer) so that their pages are in the cache; a missing file is left to
// MNN, which names it in its own error.
int64_t ReadThrough(const std::vector<std::string>& files) {
  std::vector<char> buffer(1 << 20);
  int64_t total = 0;
  for (const auto& f : files) {
    std::FILE* fp = std::fopen(f.c_str(), "rb");
    if (fp == nullptr) continue;
    size_t n;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), fp)) > 0) total += static_cast<int64_t>(n);
    std::fclose(fp);
  }
  return total;
}

}  // namespace
Napi::Function LlmHandle::Init(Napi::Env env) {
  return DefineClass(env, "LlmHandle",
                     {
                         InstanceMethod<&LlmHandle::ConfigJson>("configJson"),
                         InstanceMethod<&LlmHandle::Load>("load"),
                         InstanceMethod<&LlmHandle::Generate>("generate"),
                         InstanceMethod<&LlmHandle::Ack>("ack"),
                         InstanceMethod<&LlmHandle::Cancel>("cancel"),
                         InstanceMethod<&LlmHandle::Stats>("stats"),
                         InstanceMethod<&LlmHandle::Reset>("reset"),
                         InstanceMethod<&LlmHandle::EraseHistory>("eraseHistory"),
                         InstanceMethod<&LlmHandle::Encode>("encode"),
                         InstanceMethod<&LlmHandle::Decode>("decode"),
                         InstanceMethod<&LlmHandle::Dispose>("dispose"),
                         InstanceMethod<&LlmHandle::Speak>("speak"),
                         InstanceMethod<&LlmHandle::NextSpeechChunk>("nextSpeechChunk"),
                         InstanceMethod<&LlmHandle::SetConversations>("setConversations"),
                         InstanceMethod<&LlmHandle::DropSnapshots>("dropSnapshots"),
                     });
}

// new LlmHandle(configPath, overridesJson): reads the config only (cheap); the weights load in load().
LlmHandle::LlmHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<LlmHandle>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString()) {
    ThrowJs(env, "EINVAL", "LlmHandle(configPath: string, overridesJson: string)");
  }
  configPath_ = info[0].As<Napi::String>().Utf8Value();
  std::string overrides = info[1].As<Napi::String>().Utf8Value();
  if (!FileExists(configPath_)) ThrowJs(env, "ENOENT", "LLM config file not found: " + configPath_);
  llm_ = Llm::createLLM(configPath_);
  if (llm_ == nullptr) ThrowJs(env, "ELOAD", "MNN Llm::createLLM failed for " + configPath_);
  if (!overrides.empty() && overrides != "{}" && !llm_->set_config(overrides)) {
    DestroyLlm(llm_);
    llm_ = nullptr;
    ThrowJs(env, "EINVAL", "MNN Llm::set_config rejected the overrides for " + configPath_ + ": " + overrides);
  }
}

LlmHandle::~LlmHandle() {
  // A GC'd handle whose owner never called dispose(): no worker can hold it (workers keep a reference).
  if (llm_ != nullptr) {
    DropContexts(1);
    DestroyLlm(llm_);
  }
}

Llm* LlmHandle::Require(Napi::Env env, const char* what) {
  if (llm_ == nullptr) ThrowJs(env, "EDISPOSED", std::string(what) + ": the model was disposed");
  return llm_;
}

Napi::Value LlmHandle::ConfigJson(const Napi::CallbackInfo& info) {
  Llm* llm = Require(info.Env(), "Llm.configJson");
  if (busy_.IsBusy()) ThrowJs(info.Env(), "EBUSY", "Llm.configJson: the model is busy");
  return Napi::String::New(info.Env(), llm->dump_config());
}

// load(files?: string[]) → {readUs, readBytes, loadUs}: reads `files` (the model's weights) through the page
// cache first, so that a load's time splits into the I/O and MNN's own work (parse, allocate, repack weights).
Napi::Value LlmHandle::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.load");
  std::string path = configPath_;
  std::vector<std::string> files;
  if (info.Length() > 0 && info[0].IsArray()) {
    auto arr = info[0].As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) files.push_back(arr.Get(i).As<Napi::String>().Utf8Value());
  }
  return PromiseWorker<LoadTiming>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.load",
      [this, llm, path, files, relay = relay_]() {
        LoadTiming t;
        double t0 = MonotonicUs();
        t.readBytes = static_cast<double>(ReadThrough(files));
        double t1 = MonotonicUs();
        t.readUs = t1 - t0;
        int64_t before = ResidentBytes();
        if (!llm->load()) {
          throw EngineError("ELOAD", "MNN Llm::load failed for " + path + " (MNN's reason is in the engine log)");
        }
        t.loadUs = MonotonicUs() - t1;
        RequireLlmBackend(llm, "the LLM of " + path);
        // A no-op for models without a talker (only Omni's talker takes it).
        llm->setWavformCallback(
            [relay](const float* data, size_t size, bool last) { return relay->Forward(data, size, last); });
        contexts_.Init(llm);
        active_ = 0;
        loaded_ = true;
        int64_t grown = ResidentBytes() - before;
        t.grownBytes = grown > 0 ? grown : int64_t{0};
        return t;
      },
      [this](Napi::Env e, LoadTiming& t) {
        externalBytes_ = t.grownBytes;
        Napi::MemoryManagement::AdjustExternalMemory(e, t.grownBytes);
        Napi::Object o = Napi::Object::New(e);
        o.Set("readUs", t.readUs);
        o.Set("readBytes", t.readBytes);
        o.Set("loadUs", t.loadUs);
        return o;
      });
}

Napi::Value LlmHandle::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Require(env, "Llm.stats");
  if (busy_.IsBusy()) ThrowJs(env, "EBUSY", "Llm.stats: the model is busy");
  const auto* ctx = Active()->getContext();
  Napi::Object o = Napi::Object::New(env);
  // MNN's prompt_len counts what was prefilled; the prompt also has the tokens whose KV was kept.
  o.Set("promptTokens", static_cast<double>(gen_.reuse.keep) + ctx->prompt_len);
  Napi::Object reuse = Napi::Object::New(env);
  reuse.Set("outcome", gen_.reuse.outcome);
  reuse.Set("reason", gen_.reuse.reason.empty() ? env.Null() : Napi::String::New(env, gen_.reuse.reason));
  reuse.Set("reusedTokens", static_cast<double>(gen_.reuse.keep));
  reuse.Set("prefilledTokens", static_cast<double>(ctx->prompt_len));
  reuse.Set("heldTokens", static_cast<double>(gen_.reuse.held));
  reuse.Set("chunkTokens", gen_.chunk > 0 ? Napi::Number::New(env, gen_.chunk) : env.Null());
  Napi::Object contexts = Napi::Object::New(env);
  contexts.Set("context", static_cast<double>(gen_.context));
  contexts.Set("route", gen_.route);
  contexts.Set("count", static_cast<double>(contexts_.count()));
  contexts.Set("max", static_cast<double>(contexts_.max()));
  contexts.Set("snapshotBytes", static_cast<double>(contexts_.SnapshotBytes()));
  contexts.Set("budgetBytes", static_cast<double>(contexts_.budget()));
  contexts.Set("evictions", static_cast<double>(contexts_.evictions()));
  contexts.Set("createUs", gen_.contextCreateUs);
  contexts.Set("error", gen_.contextError.empty() ? env.Null() : Napi::String::New(env, gen_.contextError));
  reuse.Set("contexts", contexts);
  o.Set("reuse", reuse);
  // The generated token ids (a stop token included): lets a caller compare outputs token for token.
  const auto& out = ctx->output_tokens;
  auto outputIds = Napi::Int32Array::New(env, out.size());
  if (!out.empty()) std::memcpy(outputIds.Data(), out.data(), out.size() * sizeof(int));
  o.Set("outputIds", outputIds);
  o.Set("generatedTokens", ctx->gen_seq_len);
  o.Set("historyTokens", static_cast<double>(ctx->all_seq_len));
  o.Set("prefillUs", static_cast<double>(ctx->prefill_us));
  o.Set("decodeUs", static_cast<double>(ctx->decode_us));
  o.Set("sampleUs", static_cast<double>(ctx->sample_us));
  o.Set("visionUs", static_cast<double>(ctx->vision_us - gen_.visionUsBefore));
  o.Set("audioUs", static_cast<double>(ctx->audio_us - gen_.audioUsBefore));
  o.Set("ttfaUs", static_cast<double>(ctx->ttfa_us));
  o.Set("audioInputSeconds", gen_.audioInputSeconds);
  o.Set("finishReason", gen_.finishReason.empty() ? env.Null() : Napi::String::New(env, gen_.finishReason));
  return o;
}

Napi::Value LlmHandle::Reset(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Require(env, "Llm.reset");
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.reset",
      [this]() {
        // Every conversation's KV: a reset model holds none (the contexts stay made, empty).
        for (size_t i = 0; i < contexts_.count(); ++i) {
          KvContext& c = contexts_.at(i);
          MNN::Express::ExecutorScope scope(c.llm->getExecutor());
          c.llm->reset();
          c.held.Clear();
        }
        gen_ = Generation();
        gen_.context = active_;
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

Napi::Value LlmHandle::EraseHistory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Require(env, "Llm.eraseHistory");
  size_t begin = info[0].As<Napi::Number>().Int64Value();
  size_t end = info[1].As<Napi::Number>().Int64Value();
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.eraseHistory",
      [this, begin, end]() {
        Llm* llm = Active();
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        size_t current = llm->getCurrentHistory();
        size_t last = end == 0 ? current : end;
        if (last > current || begin >= last) {
          throw EngineError("ERANGE", "Llm.eraseHistory: range [" + std::to_string(begin) + ", " +
                                          std::to_string(last) + ") is outside the history of " +
                                          std::to_string(current) + " tokens");
        }
        llm->eraseHistory(begin, end);
        // Erasing a middle range shifts what follows it: the held tokens no longer say what the KV holds.
        if (contexts_.count() > 0) {
          HeldPrefix& held = contexts_.at(active_).held;
          if (end == 0) {
            held.Truncate(begin);
          } else {
            held.Clear();
          }
        }
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

Napi::Value LlmHandle::Encode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.encode");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.encode: the model is not loaded");
  std::string text = info[0].As<Napi::String>().Utf8Value();
  return PromiseWorker<std::vector<int>>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.encode",
      [llm, text]() { return llm->tokenizer_encode(text); },
      [](Napi::Env e, std::vector<int>& ids) {
        auto out = Napi::Int32Array::New(e, ids.size());
        if (!ids.empty()) std::memcpy(out.Data(), ids.data(), ids.size() * sizeof(int));
        return out;
      });
}

Napi::Value LlmHandle::Decode(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.decode");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.decode: the model is not loaded");
  auto arr = info[0].As<Napi::Int32Array>();
  std::vector<int> ids(arr.Data(), arr.Data() + arr.ElementLength());
  return PromiseWorker<std::string>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.decode",
      [llm, ids]() {
        std::string out;
        for (int id : ids) out += llm->tokenizer_decode(id);
        return out;
      },
      [](Napi::Env e, std::string& s) { return Napi::String::New(e, s); });
}

Napi::Value LlmHandle::Dispose(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (busy_.IsBusy()) ThrowJs(env, "EBUSY", "Llm.dispose: the model is busy (await the running call first)");
  Llm* llm = llm_;
  llm_ = nullptr;
  loaded_ = false;
  cancel_.store(true);
  if (externalBytes_ > 0) Napi::MemoryManagement::AdjustExternalMemory(env, -externalBytes_);
  externalBytes_ = 0;
  if (llm == nullptr) {
    auto d = Napi::Promise::Deferred::New(env);
    d.Resolve(env.Undefined());
    return d.Promise();
  }
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.dispose",
      [this, llm]() {
        // The extra contexts first: their executions are clones of the instance's.
        DropContexts(1);
        DestroyLlm(llm);
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

}  // namespace mnn_edge
