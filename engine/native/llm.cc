#include "llm.h"

#include <MNN/expr/ExecutorScope.hpp>
#include <llm/llm.hpp>

#include <cstring>
#include <utility>
#include <vector>

#include "chosen_backend.h"
#include "media.h"

namespace mnn_edge {

using MNN::Transformer::Llm;
using MNN::Transformer::LlmStatus;

namespace {

struct ImageRequest {
  std::string key;
  std::string path;
  std::vector<uint8_t> rgb;
  int width = 0;
  int height = 0;
};

struct AudioRequest {
  std::string key;
  std::string path;
  std::vector<float> samples;
  int sampleRate = kAudioSampleRate;
  bool hasSamples = false;
};

struct PrefillRequest {
  std::string text;
  MNN::Transformer::ChatMessages messages;
  bool useMessages = false;
  bool applyTemplate = true;
  int maxNewTokens = 0;
  std::vector<ImageRequest> images;
  std::vector<AudioRequest> audios;
};

struct StepResult {
  std::string text;
  bool done = false;
  std::string reason;
  int token = -1;
};

std::string StringField(const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
}

PrefillRequest ParsePrefill(Napi::Env env, const Napi::Object& req) {
  PrefillRequest r;
  Napi::Value messages = req.Get("messages");
  if (messages.IsArray()) {
    auto arr = messages.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto pair = arr.Get(i).As<Napi::Array>();
      r.messages.emplace_back(pair.Get(0u).As<Napi::String>().Utf8Value(),
                              pair.Get(1u).As<Napi::String>().Utf8Value());
    }
    r.useMessages = true;
  } else {
    r.text = StringField(req, "text");
  }
  r.applyTemplate = req.Get("applyTemplate").ToBoolean().Value();
  r.maxNewTokens = req.Get("maxNewTokens").As<Napi::Number>().Int32Value();
  Napi::Value images = req.Get("images");
  if (images.IsArray()) {
    auto arr = images.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto o = arr.Get(i).As<Napi::Object>();
      ImageRequest img;
      img.key = StringField(o, "key");
      img.path = StringField(o, "path");
      Napi::Value data = o.Get("data");
      if (data.IsTypedArray()) {
        auto bytes = data.As<Napi::Uint8Array>();
        img.rgb.assign(bytes.Data(), bytes.Data() + bytes.ElementLength());
        img.width = o.Get("width").As<Napi::Number>().Int32Value();
        img.height = o.Get("height").As<Napi::Number>().Int32Value();
      }
      r.images.push_back(std::move(img));
    }
  }
  Napi::Value audios = req.Get("audios");
  if (audios.IsArray()) {
    auto arr = audios.As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) {
      auto o = arr.Get(i).As<Napi::Object>();
      AudioRequest a;
      a.key = StringField(o, "key");
      a.path = StringField(o, "path");
      Napi::Value samples = o.Get("samples");
      if (samples.IsTypedArray()) {
        auto f = samples.As<Napi::Float32Array>();
        a.samples.assign(f.Data(), f.Data() + f.ElementLength());
        a.sampleRate = o.Get("sampleRate").As<Napi::Number>().Int32Value();
        a.hasSamples = true;
      }
      r.audios.push_back(std::move(a));
    }
  }
  (void)env;
  return r;
}

}  // namespace

Napi::Function LlmHandle::Init(Napi::Env env) {
  return DefineClass(env, "LlmHandle",
                     {
                         InstanceMethod<&LlmHandle::ConfigJson>("configJson"),
                         InstanceMethod<&LlmHandle::Load>("load"),
                         InstanceMethod<&LlmHandle::Prefill>("prefill"),
                         InstanceMethod<&LlmHandle::Step>("step"),
                         InstanceMethod<&LlmHandle::Cancel>("cancel"),
                         InstanceMethod<&LlmHandle::Stats>("stats"),
                         InstanceMethod<&LlmHandle::Reset>("reset"),
                         InstanceMethod<&LlmHandle::EraseHistory>("eraseHistory"),
                         InstanceMethod<&LlmHandle::Encode>("encode"),
                         InstanceMethod<&LlmHandle::Decode>("decode"),
                         InstanceMethod<&LlmHandle::Dispose>("dispose"),
                         InstanceMethod<&LlmHandle::Speak>("speak"),
                         InstanceMethod<&LlmHandle::NextSpeechChunk>("nextSpeechChunk"),
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
    Llm::destroy(llm_);
    llm_ = nullptr;
    ThrowJs(env, "EINVAL", "MNN Llm::set_config rejected the overrides for " + configPath_ + ": " + overrides);
  }
}

LlmHandle::~LlmHandle() {
  // A GC'd handle whose owner never called dispose(): no worker can hold it (workers keep a reference).
  if (llm_ != nullptr) Llm::destroy(llm_);
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

Napi::Value LlmHandle::Load(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.load");
  std::string path = configPath_;
  return PromiseWorker<int64_t>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.load",
      [this, llm, path]() {
        int64_t before = ResidentBytes();
        if (!llm->load()) {
          throw EngineError("ELOAD", "MNN Llm::load failed for " + path + " (MNN's reason is in the engine log)");
        }
        RequireLlmBackend(llm, "the LLM of " + path);
        loaded_ = true;
        int64_t grown = ResidentBytes() - before;
        return grown > 0 ? grown : int64_t{0};
      },
      [this](Napi::Env e, int64_t& grown) {
        externalBytes_ = grown;
        Napi::MemoryManagement::AdjustExternalMemory(e, grown);
        return e.Undefined();
      });
}

Napi::Value LlmHandle::Prefill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.prefill");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.prefill: the model is not loaded");
  if (info.Length() < 1 || !info[0].IsObject()) ThrowJs(env, "EINVAL", "Llm.prefill(request: object)");
  auto req = std::make_shared<PrefillRequest>(ParsePrefill(env, info[0].As<Napi::Object>()));
  cancel_.store(false);
  return PromiseWorker<int>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.prefill",
      [this, llm, req]() {
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        const std::string& path = configPath_;
        gen_ = Generation();
        MNN::Transformer::MultimodalPrompt prompt;
        double audioSeconds = 0;
        for (auto& img : req->images) {
          MNN::Transformer::PromptImagePart part;
          part.image_data = img.rgb.empty() ? LoadImageFile(img.path) : ImageFromRgb(img.rgb, img.width, img.height);
          part.width = 0;  // 0: the model's own image_size, as for a file path in the prompt text
          part.height = 0;
          prompt.images[img.key] = part;
        }
        for (auto& a : req->audios) {
          LoadedAudio loaded = a.hasSamples ? AudioFromPcm(a.samples, a.sampleRate) : LoadAudioFile(a.path);
          audioSeconds += loaded.seconds;
          MNN::Transformer::PromptAudioPart part;
          part.waveform = loaded.waveform;
          prompt.audios[a.key] = part;
        }
        if (req->useMessages) {
          prompt.prompt_template = llm->apply_chat_template(req->messages);
        } else if (req->applyTemplate) {
          prompt.prompt_template = llm->apply_chat_template(req->text);
          if (prompt.prompt_template.empty()) prompt.prompt_template = req->text;
        } else {
          prompt.prompt_template = req->text;
        }
        if (cancel_.load()) throw EngineError("EABORT", "Llm.generate: aborted before prefill");
        const auto* ctx = llm->getContext();
        int64_t visionBefore = ctx->vision_us;
        int64_t audioBefore = ctx->audio_us;
        std::vector<int> ids = llm->tokenizer_encode(prompt);
        if (ids.empty()) throw EngineError("EINVAL", "Llm.generate: the prompt encodes to no tokens for " + path);
        llm->generate_init(nullptr, "");
        if (ctx->status == LlmStatus::INTERNAL_ERROR || ctx->status == LlmStatus::NOT_LOADED) {
          throw EngineError("EENGINE", "MNN Llm::generate_init left the model of " + path + " in error state " +
                                           std::to_string(static_cast<int>(ctx->status)));
        }
        // max_new_tokens 0: prefill only; decode then advances one token per step().
        llm->generate(ids, 0);
        if (ctx->status == LlmStatus::INTERNAL_ERROR) {
          throw EngineError("EENGINE", "MNN Llm::generate (prefill of " + std::to_string(ids.size()) + " tokens) failed for " +
                                           path + "; MNN's reason is in the engine log");
        }
        gen_.active = true;
        gen_.remaining = req->maxNewTokens;
        gen_.visionUsBefore = visionBefore;
        gen_.audioUsBefore = audioBefore;
        gen_.audioInputSeconds = audioSeconds;
        return ctx->prompt_len;
      },
      [](Napi::Env e, int& promptTokens) { return Napi::Number::New(e, promptTokens); });
}

Napi::Value LlmHandle::Step(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.step");
  return PromiseWorker<StepResult>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.step",
      [this, llm]() {
        const std::string& path = configPath_;
        StepResult r;
        auto finish = [&](const char* reason) {
          gen_.active = false;
          gen_.finishReason = reason;
          r.text += gen_.utf8.Flush();
          r.done = true;
          r.reason = reason;
        };
        if (!gen_.active) {
          r.done = true;
          r.reason = gen_.finishReason.empty() ? "none" : gen_.finishReason;
          return r;
        }
        if (cancel_.load()) {
          finish("aborted");
          return r;
        }
        if (gen_.remaining <= 0) {
          finish("length");
          return r;
        }
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        llm->generate(1);
        const auto* ctx = llm->getContext();
        if (ctx->status == LlmStatus::INTERNAL_ERROR) {
          gen_.active = false;
          throw EngineError("EENGINE",
                            "MNN Llm::generate (decode step) failed for " + path + "; MNN's reason is in the engine log");
        }
        gen_.remaining -= 1;
        r.token = ctx->current_token;
        if (llm->stoped()) {
          finish("stop");
          return r;
        }
        r.text = gen_.utf8.Push(llm->tokenizer_decode(r.token));
        if (gen_.remaining <= 0) finish("length");
        return r;
      },
      [](Napi::Env e, StepResult& r) {
        Napi::Object o = Napi::Object::New(e);
        o.Set("text", Napi::String::New(e, r.text));
        o.Set("done", Napi::Boolean::New(e, r.done));
        o.Set("reason", r.reason.empty() ? e.Null() : Napi::String::New(e, r.reason));
        o.Set("token", Napi::Number::New(e, r.token));
        return o;
      });
}

// Safe from the JS thread at any time: the running step sees it before its next token.
void LlmHandle::Cancel(const Napi::CallbackInfo&) {
  cancel_.store(true);
  if (speech_) speech_->Cancel();
}

Napi::Value LlmHandle::Stats(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.stats");
  if (busy_.IsBusy()) ThrowJs(env, "EBUSY", "Llm.stats: the model is busy");
  const auto* ctx = llm->getContext();
  Napi::Object o = Napi::Object::New(env);
  o.Set("promptTokens", ctx->prompt_len);
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
  Llm* llm = Require(env, "Llm.reset");
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.reset",
      [this, llm]() {
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        llm->reset();
        gen_ = Generation();
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

Napi::Value LlmHandle::EraseHistory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.eraseHistory");
  size_t begin = info[0].As<Napi::Number>().Int64Value();
  size_t end = info[1].As<Napi::Number>().Int64Value();
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.eraseHistory",
      [llm, begin, end]() {
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        size_t current = llm->getCurrentHistory();
        size_t last = end == 0 ? current : end;
        if (last > current || begin >= last) {
          throw EngineError("ERANGE", "Llm.eraseHistory: range [" + std::to_string(begin) + ", " +
                                          std::to_string(last) + ") is outside the history of " +
                                          std::to_string(current) + " tokens");
        }
        llm->eraseHistory(begin, end);
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
      [llm]() {
        Llm::destroy(llm);
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

// speak({text?, language, maxNewTokens, refAudio}) → Promise<void>: runs the talker for the last generation (no
// text) or Qwen3-TTS style generateTTS(text); chunks are pulled with nextSpeechChunk() while it runs.
Napi::Value LlmHandle::Speak(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.speak");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.speak: the model is not loaded");
  auto o = info[0].As<Napi::Object>();
  bool tts = o.Get("text").IsString();
  std::string text = StringField(o, "text");
  std::string language = StringField(o, "language");
  std::string refAudio = StringField(o, "refAudio");
  int maxNewTokens = o.Get("maxNewTokens").IsNumber() ? o.Get("maxNewTokens").As<Napi::Number>().Int32Value() : -1;
  auto queue = std::make_shared<PcmQueue>(8);
  speech_ = queue;
  cancel_.store(false);
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.speak",
      [llm, queue, tts, text, language, refAudio, maxNewTokens, path = configPath_]() {
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        llm->setWavformCallback(
            [queue](const float* data, size_t size, bool last) { return queue->Push(data, size, last); });
        bool ok = true;
        if (tts) {
          ok = llm->generateTTS(text, language.empty() ? "english" : language, maxNewTokens, refAudio);
        } else {
          llm->generateWavform();
        }
        llm->setWavformCallback(nullptr);
        queue->Close();
        if (!ok) throw EngineError("EENGINE", "MNN Llm::generateTTS failed for " + path + "; MNN's reason is in the engine log");
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

// nextSpeechChunk() → Promise<{samples: Float32Array, last: boolean} | null>; null when speech has ended.
// Deliberately not holding the busy flag: it only waits on the queue that speak() fills.
Napi::Value LlmHandle::NextSpeechChunk(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto queue = speech_;
  if (!queue) ThrowJs(env, "ESTATE", "Llm.nextSpeechChunk: no speech was started");
  using Maybe = std::pair<bool, PcmChunk>;
  return PromiseWorker<Maybe>::Start(
      env, info.This().As<Napi::Object>(), nullptr, "Llm.nextSpeechChunk",
      [queue]() {
        Maybe m;
        m.first = queue->Pop(&m.second);
        return m;
      },
      [](Napi::Env e, Maybe& m) -> Napi::Value {
        if (!m.first) return e.Null();
        auto samples = Napi::Float32Array::New(e, m.second.samples.size());
        if (!m.second.samples.empty()) {
          std::memcpy(samples.Data(), m.second.samples.data(), m.second.samples.size() * sizeof(float));
        }
        Napi::Object o = Napi::Object::New(e);
        o.Set("samples", samples);
        o.Set("last", Napi::Boolean::New(e, m.second.last));
        return o;
      });
}

}  // namespace mnn_edge
