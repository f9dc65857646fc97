#include "chosen_backend.h"

#include <MNN/Interpreter.hpp>

#include "backend_probe.h"
#include "backends.h"
#include "common.h"

namespace mnn_edge {

namespace {

// Llm keeps its runtime manager protected and offers no getter. A pointer to that member, formed in a derived
// class (where naming it is allowed), reads it from any Llm without copying MNN's private headers.
struct LlmRuntimeAccess : MNN::Transformer::Llm {
  using Member = std::shared_ptr<MNN::Express::Executor::RuntimeManager> MNN::Transformer::Llm::*;
  static Member RuntimeManager() { return &LlmRuntimeAccess::mRuntimeManager; }
};

std::string NameOf(int type) {
  for (const auto& b : KnownBackends())
    if (static_cast<int>(b.type) == type) return b.name;
  return "forward type " + std::to_string(type);
}

}  // namespace

int ChosenForwardType(const std::shared_ptr<MNN::Express::Executor::RuntimeManager>& rt) {
  if (!rt) return -1;
  int type = -1;
  if (!rt->getInfo(MNN::Interpreter::BACKENDS, &type)) return -1;
  return type;
}

std::string LlmRequestedBackend(MNN::Transformer::Llm* llm) {
  // dump_config() is MNN's JSON of the merged config; only the top-level backend_type matters here.
  std::string json = llm->dump_config();
  const std::string key = "\"backend_type\"";
  size_t at = json.find(key);
  if (at == std::string::npos) return "cpu";
  size_t open = json.find('"', json.find(':', at + key.size()) + 1);
  size_t close = open == std::string::npos ? std::string::npos : json.find('"', open + 1);
  if (close == std::string::npos) return "cpu";
  return json.substr(open + 1, close - open - 1);
}

void RequireChosenBackend(const std::shared_ptr<MNN::Express::Executor::RuntimeManager>& rt,
                          const std::string& requested, const std::string& what) {
  int want = ForwardTypeOf(requested);
  if (want < 0) return;  // the caller validated the name; an alias MNN maps itself is not ours to judge
  int got = ChosenForwardType(rt);
  if (got < 0 || got == want) return;
  std::string why = ProbeBackendChain(requested, static_cast<MNNForwardType>(want)).FirstFailure();
  throw EngineError("EBACKEND", "MNN backend \"" + requested + "\" requested for " + what + " but MNN loaded it on " +
                                    NameOf(got) + (why.empty() ? "" : ": " + why) +
                                    "; refusing to run on another backend silently");
}

void RequireLlmBackend(MNN::Transformer::Llm* llm, const std::string& what) {
  RequireChosenBackend(llm->*LlmRuntimeAccess::RuntimeManager(), LlmRequestedBackend(llm), what);
}

}  // namespace mnn_edge
