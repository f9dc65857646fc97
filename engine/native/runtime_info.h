// runtimeInfo(): what this MNN build offers, so the planner decides placement on facts, not on MNN's
// silent CPU fallback.
#pragma once

#include <napi.h>

namespace mnn_edge {

Napi::Value RuntimeInfo(const Napi::CallbackInfo& info);
// checkBackend(name): throws a specific error when `name` is unknown, not compiled in, or not usable here.
Napi::Value CheckBackend(const Napi::CallbackInfo& info);

}  // namespace mnn_edge
