#include "heap.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace mnn_edge {

// An engine host outlives its model: after an unload it waits for the next one. What the model freed (its
// weights' buffers, the graph parse, the conversation contexts made at load) glibc keeps mapped: it only trims the
// top of the main heap by itself, never the middle of it nor another thread's arena, so an idle host would go on
// carrying the last model's high-water mark. malloc_trim(0) releases the free pages of every arena. Elsewhere
// (musl, a board's other libc) there is nothing to ask and the answer is false.
Napi::Value TrimHeap(const Napi::CallbackInfo& info) {
#ifdef __GLIBC__
  return Napi::Boolean::New(info.Env(), malloc_trim(0) == 1);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

}  // namespace mnn_edge
