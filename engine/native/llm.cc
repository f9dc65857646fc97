#include "llm.h"

#include <MNN/expr/ExecutorScope.hpp>
#include <llm/llm.hpp>

#include <pthread.h>
#include <sched.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <system_error>
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

}  // namespace

// A generation's input, read from JS on the JS thread, used on the decode thread.
struct PrefillRequest {
  std::string text;
  MNN::Transformer::ChatMessages messages;
  bool useMessages = false;
  bool applyTemplate = true;
  int maxNewTokens = 0;
  // Keep the KV of the prompt's common prefix with what the Llm holds (false: prefill all of it).
  bool reuse = true;
  // Multimodal RoPE: positions after a media part are not token indices, so no prefix is kept with media.
  bool mrope = false;
  // The model's context in tokens (0: unknown); a longer prompt is refused the same way with or without reuse.
  int contextTokens = 0;
  // MNN's prefill chunk in tokens (its config's `chunk`; 0: none): kept KV ends on a multiple of it (AlignToChunk).
  int prefillChunk = 0;
  std::vector<ImageRequest> images;
  std::vector<AudioRequest> audios;
};

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

// Moves the calling thread to `cpus` (a big core, the core a benchmark compares on); an id the process may not
// use is the caller's error, said with the kernel's reason.
void RunOnCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string list;
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) throw EngineError("EINVAL", "Llm.generate: no logical CPU " + std::to_string(c));
    CPU_SET(c, &set);
    list += (list.empty() ? "" : ",") + std::to_string(c);
  }
  int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0) {
    throw EngineError("EINVAL", "Llm.generate: cannot run the decode thread on CPUs " + list + ": " +
                                    std::strerror(err) + " (CPUs this process may not use, or offline)");
  }
}

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
  r.reuse = !req.Get("reuse").IsBoolean() || req.Get("reuse").As<Napi::Boolean>().Value();
  r.mrope = req.Get("mrope").ToBoolean().Value();
  r.contextTokens = req.Get("contextTokens").IsNumber() ? req.Get("contextTokens").As<Napi::Number>().Int32Value() : 0;
  r.prefillChunk = req.Get("prefillChunk").IsNumber() ? req.Get("prefillChunk").As<Napi::Number>().Int32Value() : 0;
  if (r.prefillChunk < 0) r.prefillChunk = 0;
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

// How many of `ids` precede the prompt's first media part (ids.size() without media): the tokens of the text
// before the first media tag, as far as they agree with the prompt's own.
size_t TokensBeforeMedia(Llm* llm, const std::string& text, const std::vector<int>& ids) {
  size_t pos = std::string::npos;
  for (const char* tag : {"<img>", "<audio>", "<video>"}) pos = std::min(pos, text.find(tag));
  if (pos == std::string::npos) return ids.size();
  std::vector<int> before = llm->Llm::tokenizer_encode(text.substr(0, pos));
  size_t n = 0;
  while (n < before.size() && n < ids.size() && before[n] == ids[n]) ++n;
  return n;
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

// generate(request, window, onBatch): prefill and decode on a thread of this generation's own, at most `window`
// tokens ahead of ack(); onBatch({pieces, producedUsSum, firstUs, lastUs, done, reason, error}) runs on the JS
// thread with every token decoded since the last call. The model stays busy until the batch with `done`.
void LlmHandle::Generate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.generate");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.generate: the model is not loaded");
  if (info.Length() < 3 || !info[0].IsObject() || !info[1].IsNumber() || !info[2].IsFunction()) {
    ThrowJs(env, "EINVAL",
            "Llm.generate(request: object, window: number, onBatch: function, holdUs?: number, cpus?: number[])");
  }
  auto req = std::make_shared<PrefillRequest>(ParsePrefill(env, info[0].As<Napi::Object>()));
  int window = info[1].As<Napi::Number>().Int32Value();
  // Optional: how long decoded tokens may wait to be handed over together (µs; 0: each as soon as JS is idle).
  double holdUs = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().DoubleValue() : 0;
  if (!busy_.TryAcquire()) {
    ThrowJs(env, "EBUSY", "Llm.generate: the object is busy with another call (calls must be sequential)");
  }
  cancel_.store(false);
  auto run = std::make_shared<DecodeRun>(window, holdUs);
  if (info.Length() > 4 && info[4].IsArray()) {
    auto arr = info[4].As<Napi::Array>();
    for (uint32_t i = 0; i < arr.Length(); ++i) run->cpus.push_back(arr.Get(i).As<Napi::Number>().Int32Value());
  }
  run_ = run;
  // The JS object (and so this handle) lives until the thread is done and the last batch was delivered.
  run->owner = Napi::Persistent(info.This().As<Napi::Object>());
  run->toJs = Napi::ThreadSafeFunction::New(env, info[2].As<Napi::Function>(), "mnn-edge.decode", 0, 1,
                                            [run](Napi::Env) {
                                              if (run->thread.joinable()) run->thread.join();
                                              run->owner.Reset();
                                            });
  try {
    run->thread = std::thread([this, llm, req, run]() { DecodeLoop(llm, *req, run); });
  } catch (const std::system_error& e) {
    busy_.Release();
    run->toJs.Release();
    ThrowJs(env, "EENGINE", std::string("Llm.generate: cannot start the decode thread: ") + e.what());
  }
}

// ack(tokens): the consumer took this many more tokens; the decode thread may run that much further.
void LlmHandle::Ack(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsNumber()) ThrowJs(info.Env(), "EINVAL", "Llm.ack(tokens: number)");
  if (auto run = run_.lock()) run->channel.Ack(info[0].As<Napi::Number>().Int32Value());
}

// Decode thread: the prompt up to the KV cache, sets gen_ for the decode loop.
Llm* LlmHandle::Prefill(Llm* llm, const PrefillRequest& req) {
  const std::string& path = configPath_;
  gen_ = Generation();
  MNN::Transformer::MultimodalPrompt prompt;
  double audioSeconds = 0;
  for (auto& img : req.images) {
    MNN::Transformer::PromptImagePart part;
    part.image_data = img.rgb.empty() ? LoadImageFile(img.path) : ImageFromRgb(img.rgb, img.width, img.height);
    part.width = 0;  // 0: the model's own image_size, as for a file path in the prompt text
    part.height = 0;
    prompt.images[img.key] = part;
  }
  for (auto& a : req.audios) {
    LoadedAudio loaded = a.hasSamples ? AudioFromPcm(a.samples, a.sampleRate) : LoadAudioFile(a.path);
    audioSeconds += loaded.seconds;
    MNN::Transformer::PromptAudioPart part;
    part.waveform = loaded.waveform;
    prompt.audios[a.key] = part;
  }
  if (req.useMessages) {
    prompt.prompt_template = llm->apply_chat_template(req.messages);
  } else if (req.applyTemplate) {
    prompt.prompt_template = llm->apply_chat_template(req.text);
    if (prompt.prompt_template.empty()) prompt.prompt_template = req.text;
  } else {
    prompt.prompt_template = req.text;
  }
  if (cancel_.load()) throw EngineError("EABORT", "Llm.generate: aborted before prefill");
  const auto* ctx = llm->getContext();
  int64_t visionBefore = ctx->vision_us;
  int64_t audioBefore = ctx->audio_us;
  std::vector<int> ids = llm->tokenizer_encode(prompt);
  if (ids.empty()) throw EngineError("EINVAL", "Llm.generate: the prompt encodes to no tokens for " + path);
  // Checked on the whole prompt, kept prefix included, so a reused KV never hides an overflow.
  if (req.contextTokens > 0 && ids.size() >= static_cast<size_t>(req.contextTokens)) {
    throw EngineError("ECONTEXT", "Llm.generate: the prompt is " + std::to_string(ids.size()) +
                                      " tokens, which leaves no room to answer in the " +
                                      std::to_string(req.contextTokens) + "-token context of " + path +
                                      "; drop earlier turns or start a new conversation");
  }
  size_t beforeMedia = TokensBeforeMedia(llm, prompt.prompt_template, ids);
  size_t cap = ids.size();
  std::string capReason;
  if (!req.reuse || !llm->reuse_kv()) {
    cap = 0;
    capReason = "disabled";
  } else if (beforeMedia < ids.size()) {
    cap = req.mrope ? 0 : beforeMedia;
    capReason = "media";
  }
  // The last generation's context, if it alone grew over the budget, goes now that its stats were read.
  TrimContexts(true);
  ContextRoute route = contexts_.Route(ids, cap, capReason);
  if (route.index == contexts_.count()) {
    route.index = OpenContext();
    if (!gen_.contextError.empty()) route.route = "lru";
  }
  if (route.route == "lru") contexts_.Evict(route.index);
  active_ = route.index;
  contexts_.Touch(active_);
  gen_.reuse = route.plan;
  AlignToChunk(&gen_.reuse, static_cast<size_t>(req.prefillChunk));
  gen_.chunk = req.prefillChunk;
  gen_.context = route.index;
  gen_.route = route.route;
  Llm* active = Active();
  PrefillIds(active, ids, gen_.reuse.keep, pieces_.Stream());
  gen_.promptIds = std::move(ids);
  gen_.matchable = beforeMedia;
  gen_.remaining = req.maxNewTokens;
  gen_.visionUsBefore = visionBefore;
  gen_.audioUsBefore = audioBefore;
  gen_.audioInputSeconds = audioSeconds;
  return active;
}

// Decode thread: makes the context a route "new" asked for (Llm::create_lora on the instance's own graph file:
// its matmul executions are clones of the instance's, so only the graph, buffers and KV are new). If MNN cannot
// make it, the least recently used context is taken over instead and the reason is kept for the stats.
size_t LlmHandle::OpenContext() {
  double t0 = MonotonicUs();
  bool made = MakeContext(&gen_.contextError);
  gen_.contextCreateUs = MonotonicUs() - t0;
  if (made) return contexts_.count() - 1;
  {
    // No new context: the prompt takes over the least recently used one, as when the budget is spent.
    size_t victim = 0;
    for (size_t i = 1; i < contexts_.count(); ++i) {
      if (contexts_.at(i).lastUse < contexts_.at(victim).lastUse) victim = i;
    }
    contexts_.Evict(victim);
    return victim;
  }
}

// Resident bytes with the allocator's free memory handed back first: making a context reads the graph file into
// buffers that are freed again, and glibc keeps such memory mapped, so a plain before/after difference would
// count it (measured: 60 MiB for a 4 MiB context on the bench model, whose graph holds its weights inline).
static int64_t SettledResidentBytes() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  return ResidentBytes();
}

// A new, empty context at the end of the table (create_lora on the instance's own graph); false with the reason.
bool LlmHandle::MakeContext(std::string* error) {
  int64_t before = SettledResidentBytes();
  Llm* made = nullptr;
  try {
    made = llm_->create_lora(llmModel_);
  } catch (const std::exception& e) {
    *error = std::string("create_lora threw: ") + e.what();
    return false;
  }
  if (made == nullptr) {
    *error = "MNN Llm::create_lora failed (its reason is in the engine log)";
    return false;
  }
  contexts_.Add(made, SettledResidentBytes() - before);
  return true;
}

// The prompt's tokens into the KV cache (max_new_tokens 0: prefill only; decoding goes one step at a time after).
// Through response(), not generate_init() + generate(): Omni's response() also starts its talker's utterance
// (Talker::generate_init clears the recorded hidden states and draws the DiT noise). `os` is where the decode
// steps after it write each token's text (nullptr: nowhere).
// With reuse_kv (set at load) MNN keeps the KV between calls; the KV beyond the first `keep` tokens is erased
// here and only ids[keep..] are prefilled, at positions from `keep` on.
void LlmHandle::PrefillIds(Llm* llm, const std::vector<int>& ids, size_t keep, std::ostream* os) {
  const auto* ctx = llm->getContext();
  size_t history = llm->getCurrentHistory();
  if (keep > history || !llm->reuse_kv()) keep = 0;
  if (llm->reuse_kv() && history > keep) llm->eraseHistory(keep, 0);
  std::vector<int> rest(ids.begin() + static_cast<std::ptrdiff_t>(keep), ids.end());
  // Until the prefill has finished, what the KV holds beyond `keep` is unknown.
  contexts_.at(active_).held.Clear();
  llm->response(rest, os, "", 0);
  if (ctx->status == LlmStatus::INTERNAL_ERROR || ctx->status == LlmStatus::NOT_LOADED) {
    throw EngineError("EENGINE", "MNN Llm::response (prefill of " + std::to_string(rest.size()) +
                                     " tokens) failed for " + configPath_ + " in state " +
                                     std::to_string(static_cast<int>(ctx->status)) +
                                     "; MNN's reason is in the engine log");
  }
  voiceable_.store(true);
}

// Decode thread, after a generation: the KV holds the prompt and every generated token that was forwarded (all
// but a final stop token); anything else is not trusted and the next prompt is prefilled whole. Only the prompt's
// part before its first media token may match a later prompt: the answer's KV was computed one token at a time,
// and on quantized weights (tiny-llm-int4) that differs in the last bits from the same tokens prefilled together,
// enough to change a greedy answer; so the answer is prefilled again with the next turn, as a full prefill would.
void LlmHandle::KeepHeld(Llm* llm) {
  std::vector<int> all = std::move(gen_.promptIds);
  all.insert(all.end(), llm->getContext()->output_tokens.begin(), llm->getContext()->output_tokens.end());
  size_t kv = llm->getCurrentHistory();
  HeldPrefix& held = contexts_.at(active_).held;
  if (!llm->reuse_kv() || all.size() < kv) {
    held.Clear();
    return;
  }
  all.resize(kv);
  held.Set(std::move(all), gen_.matchable);
}

// Extra contexts beyond the count or the byte budget are dropped, least recently used first (their KV grew with
// a turn, or the limits were lowered). After a generation the one that ran stays until the next prompt is routed
// (`dropActive` false): stats() still reads it.
void LlmHandle::TrimContexts(bool dropActive) {
  std::vector<size_t> over = contexts_.OverLimit(active_, dropActive);
  std::sort(over.begin(), over.end());
  for (auto it = over.rbegin(); it != over.rend(); ++it) {
    size_t i = *it;
    contexts_.Evict(i);
    Llm* gone = contexts_.Remove(i);
    DestroyLlm(gone);
    if (active_ == i) {
      active_ = 0;
    } else if (active_ > i) {
      --active_;
    }
  }
}

// Drops the extra contexts beyond the first `keepCount` (their conversations are evicted); returns the bytes they
// were counted at. Only where no generation runs (the caller holds the busy flag, or the handle is going away).
int64_t LlmHandle::DropContexts(size_t keepCount) {
  int64_t freed = 0;
  if (keepCount < 1) keepCount = 1;
  while (contexts_.count() > keepCount) {
    size_t i = contexts_.count() - 1;
    freed += contexts_.BytesOf(contexts_.at(i));
    contexts_.Evict(i);
    DestroyLlm(contexts_.Remove(i));
  }
  if (active_ >= contexts_.count()) active_ = 0;
  return freed;
}

// Decode thread: one token per MNN step, each checked against cancel and the credit window first.
void LlmHandle::DecodeLoop(Llm* llm, const PrefillRequest& req, const std::shared_ptr<DecodeRun>& run) {
  TokenChannel& channel = run->channel;
  auto wake = [this, run]() {
    run->toJs.NonBlockingCall([this, run](Napi::Env env, Napi::Function onBatch) { Deliver(env, onBatch, *run); });
  };
  std::string reason;
  std::string code;
  std::string message;
  // Each token's text, as MNN's step writes it before computing the next token's logits.
  pieces_.SetSink([this, &channel, &wake](const std::string& text) {
    // Written during the step that gen_.remaining still counts: 1 means this is the last token.
    if (channel.Put(gen_.utf8.Push(text), MonotonicUs(), gen_.remaining <= 1)) wake();
  });
  try {
    RunOnCpus(run->cpus);
    MNN::Express::ExecutorScope scope(llm->getExecutor());
    llm = Prefill(llm, req);
    MNN::Express::ExecutorScope activeScope(llm->getExecutor());
    const auto* ctx = llm->getContext();
    for (;;) {
      if (!channel.WaitForCredit(cancel_)) {
        reason = "aborted";
        break;
      }
      if (gen_.remaining <= 0) {
        reason = "length";
        break;
      }
      llm->generate(1);
      if (ctx->status == LlmStatus::INTERNAL_ERROR) {
        throw EngineError("EENGINE", "MNN Llm::generate (decode step) failed for " + configPath_ +
                                         "; MNN's reason is in the engine log");
      }
      gen_.remaining -= 1;
      if (llm->stoped()) {
        reason = "stop";
        break;
      }
      if (gen_.remaining <= 0) {
        reason = "length";
        break;
      }
    }
  } catch (const EngineError& e) {
    code = e.code();
    message = e.what();
  } catch (const std::exception& e) {
    code = "EENGINE";
    message = std::string("Llm.generate: ") + e.what();
  } catch (...) {
    code = "EENGINE";
    message = "Llm.generate: unknown native exception";
  }
  pieces_.ClearSink();
  if (code.empty()) {
    KeepHeld(llm);
  } else {
    contexts_.at(active_).held.Clear();
  }
  try {
    TrimContexts(false);
  } catch (const std::exception&) {
    // Destroying an Llm does not throw in MNN; nothing here may keep the generation from settling.
  }
  gen_.finishReason = code.empty() ? reason : std::string();
  if (channel.Finish(gen_.utf8.Flush(), reason, code, message)) wake();
  run->toJs.Release();
}

// JS thread: hands what the decode thread left in the channel to onBatch.
void LlmHandle::Deliver(Napi::Env env, Napi::Function onBatch, DecodeRun& run) {
  TokenBatch batch = run.channel.Take();
  if (batch.pieces.empty() && !batch.done) return;
  // Released before JS sees the end, so that stats() and the next call work from inside the callback.
  if (batch.done) busy_.Release();
  Napi::Array pieces = Napi::Array::New(env, batch.pieces.size());
  for (uint32_t i = 0; i < batch.pieces.size(); ++i) pieces.Set(i, Napi::String::New(env, batch.pieces[i]));
  Napi::Object o = Napi::Object::New(env);
  o.Set("pieces", pieces);
  o.Set("tokens", batch.tokens);
  o.Set("producedUsSum", batch.producedUsSum);
  o.Set("firstUs", batch.firstUs);
  o.Set("lastUs", batch.lastUs);
  o.Set("creditWaitUs", batch.creditWaitUs);
  o.Set("done", batch.done);
  o.Set("reason", batch.done && batch.errorCode.empty() ? Napi::String::New(env, batch.reason) : env.Null());
  o.Set("error", batch.errorCode.empty() ? env.Null() : MakeJsError(env, batch.errorCode, batch.errorMessage).Value());
  try {
    onBatch.Call({o});
  } catch (const Napi::Error& e) {
    // A throwing callback is the consumer's bug: it surfaces as an uncaught exception, not a crash here.
    e.ThrowAsJavaScriptException();
  }
}

// Safe from the JS thread at any time: the decode thread sees it before its next token.
void LlmHandle::Cancel(const Napi::CallbackInfo&) {
  cancel_.store(true);
  if (auto run = run_.lock()) run->channel.Wake();
  if (speech_) speech_->Cancel();
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

// speak({mode, text?, language, maxNewTokens, refAudio}) → Promise<void>; chunks are pulled with nextSpeechChunk()
// while it runs. mode "tts": Qwen3-TTS generateTTS(text). mode "last": an omni talker voices the last generation
// (once). mode "text": an omni talker voices `text`, which is fed to the thinker as its answer to a user turn
// holding the same text (the thinker's hidden states are what the talker speaks from). MNN cannot stop its omni
// talker from outside (the talker is private to Omni, and the async vocoder ignores the callback's answer), so a
// cancel ends the PCM at once and the talker runs out its remaining codec tokens before the call settles.
Napi::Value LlmHandle::Speak(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Llm* llm = Require(env, "Llm.speak");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.speak: the model is not loaded");
  if (info.Length() < 1 || !info[0].IsObject()) ThrowJs(env, "EINVAL", "Llm.speak(request: object)");
  auto o = info[0].As<Napi::Object>();
  std::string mode = StringField(o, "mode");
  std::string text = StringField(o, "text");
  std::string language = StringField(o, "language");
  std::string refAudio = StringField(o, "refAudio");
  int maxNewTokens = o.Get("maxNewTokens").IsNumber() ? o.Get("maxNewTokens").As<Napi::Number>().Int32Value() : -1;
  if (mode != "tts" && mode != "last" && mode != "text") {
    ThrowJs(env, "EINVAL", "Llm.speak: mode must be \"tts\", \"last\" or \"text\", got \"" + mode + "\"");
  }
  if (mode != "last" && text.empty()) ThrowJs(env, "EINVAL", "Llm.speak: mode \"" + mode + "\" needs a text");
  if (mode == "last" && !voiceable_.load()) {
    ThrowJs(env, "ESTATE",
            "Llm.speak: nothing to voice: the talker speaks the last generation once; generate first, or pass a text");
  }
  if (busy_.IsBusy()) ThrowJs(env, "EBUSY", "Llm.speak: the object is busy with another call (calls must be sequential)");
  if (mode != "tts") voiceable_.store(false);
  auto queue = std::make_shared<PcmQueue>(8);
  speech_ = queue;
  cancel_.store(false);
  return PromiseWorker<bool>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.speak",
      [this, llm, queue, relay = relay_, mode, text, language, refAudio, maxNewTokens]() {
        MNN::Express::ExecutorScope scope(llm->getExecutor());
        relay->Attach(queue);
        struct Detach {
          SpeechRelay& relay;
          PcmQueue& queue;
          ~Detach() {
            relay.Detach();
            queue.Close();
          }
        } detach{*relay, *queue};
        if (mode == "tts") {
          if (!llm->generateTTS(text, language.empty() ? "english" : language, maxNewTokens, refAudio)) {
            throw EngineError("EENGINE",
                              "MNN Llm::generateTTS failed for " + configPath_ + "; MNN's reason is in the engine log");
          }
          return true;
        }
        if (mode == "text") ThinkAloud(llm, text);
        if (cancel_.load()) return true;
        llm->generateWavform();
        return true;
      },
      [](Napi::Env e, bool&) { return e.Undefined(); });
}

// Speak worker: `text` through the thinker as the answer to a user turn with the same text, token by token, so
// that the talker has the hidden states of exactly these tokens to voice.
void LlmHandle::ThinkAloud(Llm* llm, const std::string& text) {
  // The base tokenizer, not Omni's: that one reads <img>/<audio>/<video> tags as media to load, and restarts the
  // position list the prompt below needs.
  std::vector<int> answer = llm->Llm::tokenizer_encode(text);
  if (answer.empty()) throw EngineError("EINVAL", "Llm.speak: the text encodes to no tokens for " + configPath_);
  // The user turn goes through Omni's tokenizer (its position list must match the prompt), so no "<" in it may
  // open a media tag.
  std::string userTurn;
  for (char c : text) {
    userTurn += c;
    if (c == '<') userTurn += ' ';
  }
  MNN::Transformer::MultimodalPrompt prompt;
  prompt.prompt_template = llm->apply_chat_template(userTurn);
  std::vector<int> ids = llm->tokenizer_encode(prompt);
  if (ids.empty()) throw EngineError("EINVAL", "Llm.speak: the prompt encodes to no tokens for " + configPath_);
  active_ = 0;
  PrefillIds(llm, ids, 0, nullptr);
  const auto* ctx = llm->getContext();
  for (int id : answer) {
    if (cancel_.load()) return;
    llm->forward(std::vector<int>{id});
    if (ctx->status == LlmStatus::INTERNAL_ERROR) {
      throw EngineError("EENGINE", "MNN Llm::forward (the text to speak) failed for " + configPath_ +
                                       "; MNN's reason is in the engine log");
    }
  }
  // The KV now holds the spoken answer, not a prompt of a conversation.
  contexts_.at(0).held.Clear();
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

// setConversations({max, budgetBytes, kvBytesPerToken, llmModel}) → Promise<void>: how many conversation contexts
// the instance may keep (its own included; 1: snapshots off) and the bytes the extra ones may hold together. Extra
// contexts over the new limits are dropped at once, least recently used first.
Napi::Value LlmHandle::SetConversations(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Require(env, "Llm.setConversations");
  if (!loaded_) ThrowJs(env, "ESTATE", "Llm.setConversations: the model is not loaded");
  if (info.Length() < 1 || !info[0].IsObject()) {
    ThrowJs(env, "EINVAL",
            "Llm.setConversations({max: number, budgetBytes: number, kvBytesPerToken: number, llmModel: string})");
  }
  auto o = info[0].As<Napi::Object>();
  auto num = [&](const char* name) -> double {
    Napi::Value v = o.Get(name);
    if (!v.IsNumber() || v.As<Napi::Number>().DoubleValue() < 0) {
      ThrowJs(env, "EINVAL", std::string("Llm.setConversations: ") + name + " must be a non-negative number");
    }
    return v.As<Napi::Number>().DoubleValue();
  };
  size_t max = static_cast<size_t>(num("max"));
  auto budget = static_cast<int64_t>(num("budgetBytes"));
  auto perToken = static_cast<int64_t>(num("kvBytesPerToken"));
  std::string model = StringField(o, "llmModel");
  bool prepare = o.Get("prepare").ToBoolean().Value();
  struct Prepared {
    double contexts = 0;
    double us = 0;
    std::string error;
  };
  return PromiseWorker<Prepared>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.setConversations",
      [this, max, budget, perToken, model, prepare]() {
        contexts_.SetLimits(max, budget, perToken);
        if (!model.empty()) llmModel_ = model;
        DropContexts(contexts_.max());
        TrimContexts(true);
        Prepared p;
        double t0 = MonotonicUs();
        // Made now (at load), no conversation's first turn waits for MNN to make its context.
        while (prepare && contexts_.RoomForAnother() && MakeContext(&p.error)) {
        }
        TrimContexts(true);
        p.us = MonotonicUs() - t0;
        p.contexts = static_cast<double>(contexts_.count());
        return p;
      },
      [](Napi::Env e, Prepared& p) {
        Napi::Object o = Napi::Object::New(e);
        o.Set("contexts", p.contexts);
        o.Set("prepareUs", p.us);
        o.Set("error", p.error.empty() ? e.Null() : Napi::String::New(e, p.error));
        return o;
      });
}

// dropSnapshots() → Promise<number>: drops every extra context (memory is short; the model itself stays), and
// resolves with the bytes they were counted at.
Napi::Value LlmHandle::DropSnapshots(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Require(env, "Llm.dropSnapshots");
  return PromiseWorker<double>::Start(
      env, info.This().As<Napi::Object>(), &busy_, "Llm.dropSnapshots",
      [this]() { return static_cast<double>(DropContexts(1)); },
      [](Napi::Env e, double& freed) { return Napi::Number::New(e, freed); });
}

}  // namespace mnn_edge
