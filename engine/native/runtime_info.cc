#include "runtime_info.h"

#include <MNN/Interpreter.hpp>
#include <MNN/MNNDefine.h>
#include <MNN/expr/Executor.hpp>

#include <string>

#include "backend_probe.h"
#include "backends.h"
#include "common.h"

namespace mnn_edge {

Napi::Value RuntimeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object o = Napi::Object::New(env);
  o.Set("mnnVersion", Napi::String::New(env, MNN::getVersion()));
  o.Set("headerVersion", Napi::String::New(env, MNN_VERSION));
  Napi::Array backends = Napi::Array::New(env);
  uint32_t i = 0;
  for (const auto& b : KnownBackends()) {
    Napi::Object entry = Napi::Object::New(env);
    bool compiled = BackendCompiledIn(b.type);
    entry.Set("name", Napi::String::New(env, b.name));
    entry.Set("forwardType", Napi::Number::New(env, static_cast<int>(b.type)));
    entry.Set("compiledIn", Napi::Boolean::New(env, compiled));
    entry.Set("usable", Napi::Boolean::New(env, compiled && BackendUsable(b.type)));
    backends.Set(i++, entry);
  }
  o.Set("backends", backends);

  // What MNN's CPU runtime reports about the ISA it selected kernels for.
  MNN::BackendConfig config;
  auto cpu = MNN::Express::Executor::newExecutor(MNN_FORWARD_CPU, config, 1);
  Napi::Object cpuFeatures = Napi::Object::New(env);
  cpuFeatures.Set("fp16", Napi::Boolean::New(env, cpu->getCurrentRuntimeStatus(MNN::STATUS_SUPPORT_FP16) != 0));
  cpuFeatures.Set("dotProduct",
                  Napi::Boolean::New(env, cpu->getCurrentRuntimeStatus(MNN::STATUS_SUPPORT_DOT_PRODUCT) != 0));
  o.Set("cpu", cpuFeatures);
  Napi::Object features = Napi::Object::New(env);
#ifdef MNN_EDGE_HAS_AUDIO
  features.Set("audio", Napi::Boolean::New(env, true));
#else
  features.Set("audio", Napi::Boolean::New(env, false));
#endif
#ifdef MNN_EDGE_HAS_CV
  features.Set("imageCodecs", Napi::Boolean::New(env, true));
#else
  features.Set("imageCodecs", Napi::Boolean::New(env, false));
#endif
  o.Set("features", features);
  return o;
}

Napi::Value CheckBackend(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsString()) {
    ThrowJs(env, "EINVAL", "checkBackend(name: string, purpose: string)");
  }
  std::string name = info[0].As<Napi::String>().Utf8Value();
  std::string purpose = info[1].As<Napi::String>().Utf8Value();
  int type = ForwardTypeOf(name);
  if (type < 0) {
    std::string known;
    for (const auto& b : KnownBackends()) known += std::string(known.empty() ? "" : ", ") + b.name;
    ThrowJs(env, "EBACKEND", "unknown MNN backend \"" + name + "\" for " + purpose + " (known: " + known + ")");
  }
  auto t = static_cast<MNNForwardType>(type);
  if (!BackendCompiledIn(t)) {
    ThrowJs(env, "EBACKEND", "MNN backend \"" + name + "\" requested for " + purpose +
                                 " is not compiled into this MNN build; refusing to fall back to CPU silently");
  }
  if (!BackendUsable(t)) {
    std::string why = ProbeBackendChain(name, t).FirstFailure();
    ThrowJs(env, "EBACKEND", "MNN backend \"" + name + "\" requested for " + purpose +
                                 " is compiled in but cannot start on this device: " +
                                 (why.empty() ? "MNN substituted another runtime" : why) +
                                 "; refusing to fall back to CPU silently");
  }
  return env.Undefined();
}

}  // namespace mnn_edge
