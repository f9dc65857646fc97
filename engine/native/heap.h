// trimHeap(): hands the allocator's free memory back to the system (see heap.cc).
#pragma once

#include <napi.h>

namespace mnn_edge {

Napi::Value TrimHeap(const Napi::CallbackInfo& info);

}  // namespace mnn_edge
