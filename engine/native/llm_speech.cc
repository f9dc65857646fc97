// LlmHandle's speech out: speak() runs a talker (Qwen3-TTS, or an omni model's) on a pool thread, its PCM
// relayed into a queue that nextSpeechChunk() pulls from.
#include "llm.h"

#include <MNN/expr/ExecutorScope.hpp>
#include <llm/llm.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "llm_request.h"

namespace mnn_edge {

using MNN::Transformer::Llm;
using MNN::Transformer::LlmStatus;
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

}  // namespace mnn_edge
