// LlmHandle's conversation contexts (kv_contexts.h): making one for a prompt routed to a new conversation,
// trimming them to the count and the byte budget, and the calls that set those limits (setConversations) or
// drop every extra context when memory is short (dropSnapshots).
#include "llm.h"

#include <llm/llm.hpp>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "llm_request.h"

namespace mnn_edge {

using MNN::Transformer::Llm;
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
