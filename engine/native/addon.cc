// Registration only: each wrapped MNN class lives in its own file.
#include <napi.h>

#include "backend_probe.h"
#include "heap.h"
#include "llm.h"
#include "graph.h"
#include "native_sources.h"
#include "runtime_info.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("LlmHandle", mnn_edge::LlmHandle::Init(env));
  exports.Set("GraphHandle", mnn_edge::GraphHandle::Init(env));
  exports.Set("runtimeInfo", Napi::Function::New<mnn_edge::RuntimeInfo>(env, "runtimeInfo"));
  exports.Set("probeBackend", Napi::Function::New<mnn_edge::ProbeBackend>(env, "probeBackend"));
  exports.Set("checkBackend", Napi::Function::New<mnn_edge::CheckBackend>(env, "checkBackend"));
  exports.Set("trimHeap", Napi::Function::New<mnn_edge::TrimHeap>(env, "trimHeap"));
  exports.Set("nativeSources", Napi::String::New(env, MNN_EDGE_NATIVE_SOURCES));
  return exports;
}

}  // namespace

NODE_API_MODULE(mnn_edge_engine, Init)
