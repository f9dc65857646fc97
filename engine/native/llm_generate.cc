// LlmHandle's generation: generate() starts a thread of its own that prefills the prompt (keeping what it can of
// the KV a context holds) and decodes one token per step, at most `window` tokens ahead of ack(); the tokens go
// to JS in batches (Deliver) and cancel() takes effect before the next step.
#include "llm.h"

#include <pthread.h>
#include <sched.h>

#include <MNN/expr/ExecutorScope.hpp>
#include <llm/llm.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "llm_request.h"
#include "media.h"

namespace mnn_edge {

using MNN::Transformer::Llm;
using MNN::Transformer::LlmStatus;

namespace {
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

}  // namespace mnn_edge
